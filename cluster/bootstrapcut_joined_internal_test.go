package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// joinerDiskFull is a Raft log store that stores no entry.
type joinerDiskFull struct{ raft.LogStore }

var errJoinerDisk = errors.New("injected: the disk refused the leader's entries")

func (joinerDiskFull) StoreLog(*raft.Log) error    { return errJoinerDisk }
func (joinerDiskFull) StoreLogs([]*raft.Log) error { return errJoinerDisk }

// A node that joined a cluster and stored its leader's term but none of
// its entries (a disk that failed, or a crash, after the term's write)
// holds a term and no entry, like a bootstrap cut short; opened again
// with Bootstrap, it must not take it for one: a configuration of its
// own would make it a second cluster beside the one that added it. Its
// term is the leader's, 2 or more, never a bootstrap's 1.
func TestOpen_JoinedNodeWithATermAndNoEntryIsNoBootstrapCutShort(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		t.Run(kind, func(t *testing.T) {
			timeouts := func(o *Options) *Options {
				o.HeartbeatTimeout, o.ElectionTimeout, o.LeaderLeaseTimeout = 200*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
				return o
			}
			n1, err := Open(t.TempDir(), timeouts(&Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true, LogStore: kind}))
			require.NoError(t, err)
			t.Cleanup(func() { _ = n1.Close() })
			require.Eventually(t, func() bool { return n1.raft.State() == raft.Leader }, time.Minute, 20*time.Millisecond)

			dir := t.TempDir()
			o := timeouts(&Options{ID: "n2", RaftAddr: "127.0.0.1:0", LogStore: kind})
			o.logStoreHook = func(s raft.LogStore) raft.LogStore { return joinerDiskFull{s} }
			n2, err := Open(dir, o)
			require.NoError(t, err)
			require.NoError(t, n1.raft.AddNonvoter("n2", raft.ServerAddress(n2.RaftAddr()), 0, time.Minute).Error())
			require.Eventually(t, func() bool {
				term, err := n2.logs.GetUint64(keyCurrentTerm)
				return err == nil && term > 0
			}, time.Minute, 20*time.Millisecond, "n2 stores the leader's term")
			require.NoError(t, n2.Close())

			reopened, err := openLogStore(dir+"/"+raftDir, kind, 0)
			require.NoError(t, err)
			term, err := reopened.GetUint64(keyCurrentTerm)
			require.NoError(t, err)
			last, err := reopened.LastIndex()
			require.NoError(t, err)
			require.NoError(t, reopened.Close())
			require.Zero(t, last, "n2 stored no entry")
			require.GreaterOrEqual(t, term, uint64(2), "a joiner's term is its leader's")

			h := newLoggedRecords()
			o = timeouts(&Options{ID: "n2", RaftAddr: "127.0.0.1:0", LogStore: kind, Bootstrap: true, Logger: loggedOn(h)})
			n2, err = Open(dir, o)
			require.NoError(t, err)
			t.Cleanup(func() { _ = n2.Close() })
			assert.Empty(t, h.find("finishing a bootstrap cut short"))
			assert.NotEmpty(t, h.find("Bootstrap and Peers ignored"))
			f := n2.raft.GetConfiguration()
			require.NoError(t, f.Error())
			for _, s := range f.Configuration().Servers {
				assert.NotEqual(t, raft.ServerID("n2"), s.ID, "no configuration of its own: %v", f.Configuration())
			}
			assert.NotEqual(t, raft.Leader, n2.raft.State())
		})
	}
}
