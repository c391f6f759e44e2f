package cluster_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// A directory keeps the Raft log store it was created with: opening it with
// the other is refused and changes nothing; an unknown store is refused.
func TestOpen_LogStoreKindIsKept(t *testing.T) {
	for _, tc := range []struct{ made, other string }{
		{cluster.LogStoreBolt, cluster.LogStoreWAL},
		{cluster.LogStoreWAL, cluster.LogStoreBolt},
	} {
		t.Run(tc.made, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "n1")
			o := nodeOptions("n1", "127.0.0.1:0")
			o.Bootstrap, o.LogStore = true, tc.made
			n, err := cluster.Open(dir, o)
			require.NoError(t, err)
			require.NoError(t, n.Close())

			o.LogStore = tc.other
			_, err = cluster.Open(dir, o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "other Raft log store")

			o.LogStore = tc.made
			n, err = cluster.Open(dir, o)
			require.NoError(t, err, "the directory opens with its own log store")
			require.NoError(t, n.Close())
		})
	}
	o := nodeOptions("n1", "127.0.0.1:0")
	o.LogStore = "rocks"
	_, err := cluster.Open(filepath.Join(t.TempDir(), "n1"), o)
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
}
