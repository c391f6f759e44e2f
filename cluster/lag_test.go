package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// followerLags gathers equeue_cluster_follower_lag_entries by follower.
func followerLags(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "equeue_cluster_follower_lag_entries" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "follower" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// TestCollector_FollowerLag: the leader reports each follower's lag in
// entries: none while they keep up, the entries written since a stopped
// follower last answered, none again once it is back; a follower reports
// no follower lag.
func TestCollector_FollowerLag(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	li := c.leaderIndex()
	leader := c.nodes[li]
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(cluster.NewCollector(leader)))
	down, up := (li+1)%3, (li+2)%3

	caughtUp := func(ids ...string) func() error {
		return func() error {
			lags := followerLags(t, reg)
			if len(lags) != 2 {
				return fmt.Errorf("lag of %d followers reported: %v", len(lags), lags)
			}
			for _, id := range ids {
				if lags[id] != 0 {
					return fmt.Errorf("follower %s lags %v entries", id, lags[id])
				}
			}
			return nil
		}
	}
	eventually(t, 30*time.Second, caughtUp(c.id(down), c.id(up)))

	fr := prometheus.NewPedanticRegistry()
	require.NoError(t, fr.Register(cluster.NewCollector(c.nodes[up])))
	assert.Empty(t, followerLags(t, fr), "a follower reports no follower lag")

	c.stop(down)
	const sends = 20
	for i := range sends {
		_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Append(nil, i)}}})
		require.NoError(t, err)
	}
	eventually(t, 30*time.Second, caughtUp(c.id(up)))
	assert.GreaterOrEqual(t, followerLags(t, reg)[c.id(down)], float64(sends), "the stopped follower lacks every entry written since")

	c.start(down, false)
	eventually(t, 30*time.Second, caughtUp(c.id(down), c.id(up)))
	if _, err := leader.Engine(); err != nil {
		t.Fatal(errors.New("the leader changed during the test"))
	}
}
