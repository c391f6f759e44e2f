package cluster_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// A node whose Badger options give its store smaller write limits than the
// leader's stops following the log when the leader's tenure starts, with
// an error that says so, before any write it could not take; reopened with
// options at least the leader's, it follows again and holds every write.
// (It used to follow until the first write the leader took and it could
// not, then stop on that entry with a refusal for size, after a restart
// too.)
func TestNode_SmallerStoreLimitsStopAtTheTenureAndRecoverOnReopen(t *testing.T) {
	small := true
	c := newCluster(t, 3, func(o *cluster.Options) {
		if o.ID == "n3" && small {
			bo := store.DefaultBadgerOptions()
			bo.MemTableSize = 1 << 20 // limits well below the default's
			o.Badger = &bo
		}
	})
	leader := c.waitLeader()
	require.NotEqual(t, "n3", leader.ID())
	require.Less(t, cluster.StoreOf(c.nodes[2]).Limits().MaxBytes, cluster.StoreOf(leader).Limits().MaxBytes)
	eventually(t, 20*time.Second, func() error {
		if err := cluster.FSMError(c.nodes[2]); !errors.Is(err, cluster.ErrStoreLimits) {
			return fmt.Errorf("n3 follows on with smaller limits than the leader's: %v", err)
		}
		return nil
	})

	// A write the leader's store takes and n3's could not, on whichever
	// node leads as it is made (sendBatch).
	c.createTopicWith(t, "t", equeue.TopicOptions{Queues: 1})
	var bodies [][]byte
	for i := range 200 {
		bodies = append(bodies, fmt.Appendf(nil, "%03d %s", i, strings.Repeat("x", 900)))
	}
	c.sendBatch(t, "t", 0, bodies)

	small = false
	c.stop(2)
	c.start(2, false)
	c.waitConverged()
	assert.NoError(t, cluster.FSMError(c.nodes[2]))
	assert.Equal(t, cluster.StoredApplied(c.waitLeader()), cluster.StoredApplied(c.nodes[2]))
}
