package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// The bootstrap that finishes one cut short checks its configuration as
// a bootstrap does: Peers that name one Raft address twice are refused,
// on a directory cut short as on a new one, and the configuration is not
// stored. Before, the finish wrote the entry unchecked, and the node ran
// with a configuration raft.BootstrapCluster refuses.
func TestOpen_BootstrapCutShortIsFinishedOnlyWithAValidConfiguration(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			opts := func(peers []Peer) *Options {
				return &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true, Peers: peers, LogStore: kind,
					HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond, LeaderLeaseTimeout: 100 * time.Millisecond}
			}
			o := opts(nil)
			o.bootstrapLogHook = func(s raft.LogStore) raft.LogStore { return failingFirstEntry{s} }
			_, err := Open(dir, o)
			require.ErrorContains(t, err, errBootstrapDisk.Error())

			twice := []Peer{{ID: "n1", RaftAddr: "127.0.0.1:7101"}, {ID: "n2", RaftAddr: "127.0.0.1:7101"}}
			_, err = Open(t.TempDir(), opts(twice))
			require.ErrorContains(t, err, "duplicate address", "a new directory refuses them")
			n, err := Open(dir, opts(twice))
			if n != nil {
				_ = n.Close()
			}
			require.ErrorContains(t, err, "duplicate address", "a directory cut short refuses them too")

			// Still cut short: a valid bootstrap finishes it.
			n, err = Open(dir, opts(nil))
			require.NoError(t, err)
			t.Cleanup(func() { _ = n.Close() })
			require.Eventually(t, func() bool { return n.raft.State() == raft.Leader }, time.Minute, 20*time.Millisecond)
			f := n.raft.GetConfiguration()
			require.NoError(t, f.Error())
			require.Len(t, f.Configuration().Servers, 1)
		})
	}
}

// An Open without Bootstrap on a directory cut short finishes nothing: the
// node, with no configuration, waits to be added, as a new node does,
// and the directory stays cut short for an Open with Bootstrap.
func TestOpen_BootstrapCutShortIsNotFinishedWithoutBootstrap(t *testing.T) {
	dir := t.TempDir()
	opts := func(bootstrap bool) *Options {
		return &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: bootstrap,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond, LeaderLeaseTimeout: 100 * time.Millisecond}
	}
	o := opts(true)
	o.bootstrapLogHook = func(s raft.LogStore) raft.LogStore { return failingFirstEntry{s} }
	_, err := Open(dir, o)
	require.ErrorContains(t, err, errBootstrapDisk.Error())

	h := newLoggedRecords()
	o = opts(false)
	o.Logger = loggedOn(h)
	n, err := Open(dir, o)
	require.NoError(t, err)
	require.Empty(t, h.find("finishing a bootstrap cut short"))
	f := n.raft.GetConfiguration()
	require.NoError(t, f.Error())
	require.Empty(t, f.Configuration().Servers, "no configuration of its own")
	last, err := n.logs.LastIndex()
	require.NoError(t, err)
	require.Zero(t, last)
	require.NoError(t, n.Close())

	n, err = Open(dir, opts(true))
	require.NoError(t, err)
	t.Cleanup(func() { _ = n.Close() })
	require.Eventually(t, func() bool { return n.raft.State() == raft.Leader }, time.Minute, 20*time.Millisecond)
}
