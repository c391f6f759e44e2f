package cluster_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// Each of HeartbeatTimeout and ElectionTimeout defaults to 1 s when zero:
// setting only one of them opens a node (the other follows it), and
// timeouts Raft cannot run with are refused as invalid options.
func TestOpen_HeartbeatAndElectionTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name      string
		heartbeat time.Duration
		election  time.Duration
	}{
		{"heartbeat only, above the default", 2 * time.Second, 0},
		{"election only, below the default", 0, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &cluster.Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
				HeartbeatTimeout: tc.heartbeat, ElectionTimeout: tc.election}
			n, err := cluster.Open(filepath.Join(t.TempDir(), "n1"), o)
			require.NoError(t, err)
			require.NoError(t, n.Close())
		})
	}
	for _, tc := range []struct {
		name      string
		heartbeat time.Duration
		election  time.Duration
	}{
		{"election below heartbeat", 2 * time.Second, time.Second},
		{"heartbeat too low for Raft", time.Millisecond, 0},
		{"election too low for Raft", 0, time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := &cluster.Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
				HeartbeatTimeout: tc.heartbeat, ElectionTimeout: tc.election}
			_, err := cluster.Open(filepath.Join(t.TempDir(), "n1"), o)
			require.ErrorIs(t, err, equeue.ErrInvalidOptions)
		})
	}
}

// An Open that fails once the Raft transport is up (here: Raft refuses
// the bootstrap configuration, which names a node twice) returns the
// error, and releases what it opened.
func TestOpen_FailedBootstrapReturnsAnError(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	o := &cluster.Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true, Peers: []cluster.Peer{
		{ID: "n1", RaftAddr: "127.0.0.1:7001"}, {ID: "n1", RaftAddr: "127.0.0.1:7002"}}}
	_, err := cluster.Open(dir, o)
	require.Error(t, err)
	o.Peers = nil
	n, err := cluster.Open(dir, o)
	require.NoError(t, err, "the directory opens again")
	require.NoError(t, n.Close())
}

// Open refuses options it cannot run with before it touches the disk: a
// Raft address other nodes cannot dial (an unspecified host), an unknown
// log store or a negative KeepDamaged leaves no directory behind.
func TestOpen_RefusedOptionsCreateNoDirectory(t *testing.T) {
	for name, mod := range map[string]func(o *cluster.Options){
		"unspecified IPv4 host": func(o *cluster.Options) { o.RaftAddr = "0.0.0.0:7000" },
		"unspecified IPv6 host": func(o *cluster.Options) { o.RaftAddr = "[::]:7000" },
		"no host":               func(o *cluster.Options) { o.RaftAddr = ":7000" },
		"unknown log store":     func(o *cluster.Options) { o.LogStore = "nope" },
		"negative KeepDamaged":  func(o *cluster.Options) { o.KeepDamaged = -1 },
		"a peer at 0.0.0.0": func(o *cluster.Options) {
			o.Peers = []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:7000"}, {ID: "n2", RaftAddr: "0.0.0.0:7001"}}
		},
		"a peer without a host": func(o *cluster.Options) {
			o.Peers = []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:7000"}, {ID: "n2", RaftAddr: ":7001"}}
		},
		"a host with a space":            func(o *cluster.Options) { o.RaftAddr = " 127.0.0.1:7000" },
		"an ID with a control character": func(o *cluster.Options) { o.ID = "n1\x1b[2J" },
		"an ID not in UTF-8":             func(o *cluster.Options) { o.ID = "n1\xff" },
		"a peer ID of 256 bytes": func(o *cluster.Options) {
			o.Peers = []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:7000"}, {ID: strings.Repeat("n", 256), RaftAddr: "127.0.0.1:7001"}}
		},
		"a peer whose host has a control character": func(o *cluster.Options) {
			o.Peers = []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:7000"}, {ID: "n2", RaftAddr: "n2\n.example:7001"}}
		},
		"a peer without a port": func(o *cluster.Options) {
			o.Peers = []cluster.Peer{{ID: "n1", RaftAddr: "127.0.0.1:7000"}, {ID: "n2", RaftAddr: "n2.example"}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "n1")
			o := &cluster.Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true}
			mod(o)
			n, err := cluster.Open(dir, o)
			require.ErrorIs(t, err, equeue.ErrInvalidOptions)
			assert.Nil(t, n)
			assert.NoDirExists(t, dir, "a refused Open creates nothing")
		})
	}
}

// Badger options the store refuses (Options.Badger) are refused before
// Open creates anything too.
func TestOpen_RefusedBadgerOptionsCreateNoDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "n1")
	bo := store.DefaultBadgerOptions()
	bo.SegmentBytes = 1 // below the least a segment takes
	o := &cluster.Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true, Badger: &bo}
	n, err := cluster.Open(dir, o)
	require.ErrorIs(t, err, store.ErrInvalidOptions)
	assert.Nil(t, n)
	assert.NoDirExists(t, dir, "a refused Open creates nothing")
}
