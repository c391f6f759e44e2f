package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

func TestCollector_ReportsRaftState(t *testing.T) {
	c := newCluster(t, 2, nil)
	leader := c.waitLeader()
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(cluster.NewCollector(leader)))
	n, err := testutil.GatherAndCount(reg)
	require.NoError(t, err)
	assert.Positive(t, n)
	got := gatherGauges(t, reg)
	assert.Equal(t, 1.0, got["equeue_cluster_serving"])
	assert.Equal(t, 0.0, got["equeue_cluster_failed"])
	assert.Equal(t, 1.0, got["equeue_cluster_raft_state/Leader"])
	assert.Equal(t, 0.0, got["equeue_cluster_raft_state/Follower"])
	assert.Positive(t, got["equeue_cluster_commit_index"])
	assert.Positive(t, got["equeue_cluster_tenures_total"])

	// Without its lease the leader still has its engine open, and refuses
	// every call: the lease gauge says so.
	cluster.DropLease(leader)
	got = gatherGauges(t, reg)
	assert.Equal(t, 1.0, got["equeue_cluster_serving"])
	assert.Equal(t, 0.0, got["equeue_cluster_lease_held"])
	assert.False(t, leader.Status().LeaseHeld)
	cluster.RestoreLease(leader)
	eventually(t, 10*time.Second, func() error {
		if v := gatherGauges(t, reg)["equeue_cluster_lease_held"]; v != 1 {
			return fmt.Errorf("lease_held %v", v)
		}
		return nil
	})
	assert.True(t, leader.Status().LeaseHeld)
}

// gatherGauges returns the registry's gauges and counters by name (and
// label values, after a slash).
func gatherGauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			for _, l := range m.GetLabel() {
				if l.GetName() == "state" {
					name += "/" + l.GetValue()
				}
			}
			if m.GetGauge() != nil {
				got[name] = m.GetGauge().GetValue()
			} else if m.GetCounter() != nil {
				got[name] = m.GetCounter().GetValue()
			}
		}
	}
	return got
}
