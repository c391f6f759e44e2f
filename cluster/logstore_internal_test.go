package cluster

import (
	"testing"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A follower whose log holds an entry the new leader never had clears the
// log's tail; the log must open again afterwards. raft-wal before v0.4.1
// marked its segment sealed without writing its index on a tail
// truncation, and the next open failed (hashicorp/raft-wal#31): a node
// killed after that could not restart.
func TestLogStore_OpensAgainAfterTailTruncation(t *testing.T) {
	for _, kind := range []string{LogStoreWAL, LogStoreBolt} {
		t.Run(kind, func(t *testing.T) {
			dir := t.TempDir()
			ls, err := openLogStore(dir, kind, 0)
			require.NoError(t, err)
			var logs []*raft.Log
			for i := uint64(1); i <= 10; i++ {
				logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
			}
			require.NoError(t, ls.StoreLogs(logs))
			require.NoError(t, ls.DeleteRange(9, 10))
			require.NoError(t, ls.StoreLogs([]*raft.Log{{Index: 9, Term: 2, Type: raft.LogCommand, Data: []byte{99}}}))
			require.NoError(t, ls.Close())

			ls, err = openLogStore(dir, kind, 0)
			require.NoError(t, err)
			defer func() { require.NoError(t, ls.Close()) }()
			last, err := ls.LastIndex()
			require.NoError(t, err)
			assert.Equal(t, uint64(9), last)
			for i := uint64(1); i <= 9; i++ {
				var l raft.Log
				require.NoError(t, ls.GetLog(i, &l), "entry %d", i)
				assert.Equal(t, i, l.Index)
			}
			var l raft.Log
			require.NoError(t, ls.GetLog(9, &l))
			assert.Equal(t, uint64(2), l.Term, "the entry written after the truncation")
		})
	}
}
