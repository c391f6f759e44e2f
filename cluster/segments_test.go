package cluster_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// A node packs records into NodeSegmentBytes segments unless its Badger
// options choose a size.
func TestNode_SegmentBytes(t *testing.T) {
	c := newCluster(t, 1, nil)
	require.Equal(t, int64(cluster.NodeSegmentBytes), c.waitLeader().StoreSegmentBytes())

	c = newCluster(t, 1, func(o *cluster.Options) {
		bo := store.DefaultBadgerOptions()
		bo.SegmentBytes = 4096
		o.Badger = &bo
	})
	require.Equal(t, int64(4096), c.waitLeader().StoreSegmentBytes())

	// Options.Badger is the caller's: the node does not change it.
	bo := store.DefaultBadgerOptions()
	c = newCluster(t, 1, func(o *cluster.Options) { o.Badger = &bo })
	require.Equal(t, int64(cluster.NodeSegmentBytes), c.waitLeader().StoreSegmentBytes())
	require.Zero(t, bo.SegmentBytes)
}
