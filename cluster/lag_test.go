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
// no follower lag. What one leader reports is watched from start to end:
// a round an election cuts into is made again with the next leader.
func TestCollector_FollowerLag(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "t", 1)
	for round := 1; !followerLagRound(t, c); round++ {
		require.Less(t, round, 5, "an election cut into every round")
	}
}

// followerLagRound is one round of TestCollector_FollowerLag, watching the
// node that leads as it starts. It reports false, with every node running
// again, when that node stopped leading before the round ended (its term
// moved on, or it stepped down): Raft elects one leader a term, so a node
// seen leading in the same term at both ends led throughout.
func followerLagRound(t *testing.T, c *testCluster) bool {
	t.Helper()
	ctx := context.Background()
	li := c.leaderIndex()
	leader := c.nodes[li]
	term := leader.Status().Term
	led := func() bool {
		st := leader.Status()
		return st.State == "Leader" && st.Term == term
	}
	// waitLed waits for f while leader leads in term; false when it
	// stopped leading first.
	waitLed := func(f func() error) bool {
		ok := true
		eventually(t, 30*time.Second, func() error {
			if !led() {
				ok = false
				return nil
			}
			return f()
		})
		return ok
	}
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
	if !waitLed(caughtUp(c.id(down), c.id(up))) {
		return false
	}

	fr := prometheus.NewPedanticRegistry()
	require.NoError(t, fr.Register(cluster.NewCollector(c.nodes[up])))
	upLags := followerLags(t, fr)
	// Every node still in term with leader leading: up was its follower
	// when it reported.
	if !ledThroughout(c, li, term) {
		return false
	}
	assert.Empty(t, upLags, "a follower reports no follower lag")

	c.stop(down)
	abort := func() bool {
		c.start(down, false)
		return false
	}
	const sends = 20
	for i := range sends {
		// leader alone: a refusal while it leads on (its lease lapsed for
		// a moment) is made again on it.
		if !waitLed(func() error {
			_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: fmt.Append(nil, i)}}})
			if errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, equeue.ErrIndeterminate) {
				return err
			}
			require.NoError(t, err)
			return nil
		}) {
			return abort()
		}
	}
	if !waitLed(caughtUp(c.id(up))) {
		return abort()
	}
	downLag := followerLags(t, reg)[c.id(down)]
	if !led() {
		return abort()
	}
	assert.GreaterOrEqual(t, downLag, float64(sends), "the stopped follower lacks every entry written since")

	c.start(down, false)
	return waitLed(caughtUp(c.id(down), c.id(up)))
}
