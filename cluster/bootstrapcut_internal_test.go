package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// errBootstrapDisk is the failure of a bootstrap's first entry.
var errBootstrapDisk = errors.New("injected: the disk refused the bootstrap's entry")

// failingFirstEntry is a Raft log store whose StoreLog fails.
type failingFirstEntry struct{ raft.LogStore }

func (failingFirstEntry) StoreLog(*raft.Log) error { return errBootstrapDisk }

// A bootstrap writes the current term (1), then its first entry, the
// configuration. A node whose first entry failed (a disk error, or a
// crash between the two writes) holds a term and no entry: opened again
// with Bootstrap, it finishes the bootstrap and leads. Before, the term
// alone made the directory one that "holds Raft state": Bootstrap was
// ignored, the node had no configuration, and it never led, with a log
// line saying the configuration it stored stood.
func TestOpen_BootstrapCutShortIsFinishedAtTheNextOpen(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			h := newLoggedRecords()
			opts := func() *Options {
				return &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true, LogStore: kind, Logger: loggedOn(h),
					HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond, LeaderLeaseTimeout: 100 * time.Millisecond}
			}
			o := opts()
			o.bootstrapLogHook = func(s raft.LogStore) raft.LogStore { return failingFirstEntry{s} }
			_, err := Open(dir, o)
			require.ErrorContains(t, err, errBootstrapDisk.Error())

			n, err := Open(dir, opts())
			require.NoError(t, err)
			t.Cleanup(func() { _ = n.Close() })
			require.Eventually(t, func() bool { return n.raft.State() == raft.Leader }, time.Minute, 20*time.Millisecond,
				"the node leads: %v", h.lines())
			f := n.raft.GetConfiguration()
			require.NoError(t, f.Error())
			require.Len(t, f.Configuration().Servers, 1)
			require.Equal(t, raft.ServerID("n1"), f.Configuration().Servers[0].ID)
		})
	}
}
