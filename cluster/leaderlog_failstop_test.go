package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// A leader whose Raft log fails a write leaves the cluster until it is
// reopened: it shuts Raft down, as a crash would, rather than stay a voter
// and candidate whose log looks longer than what it stored (it would win
// elections, fail its first write and step down, over and over). Its calls
// are refused, Status says why, the others elect a leader and serve, and
// the reopened node catches up.
func TestLeaderLog_FailedLogTakesTheNodeOutOfTheCluster(t *testing.T) {
	c, leader := newDedupCluster(t)
	_, failing := c.logOf(leader)
	failing.fail(errDiskGone)

	o := <-sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a")})
	requireOutcome(t, o.err)
	require.Error(t, o.err, "a send whose leader write failed answered stored")

	eventually(t, 10*time.Second, func() error {
		if st := leader.Status(); st.State != "Shutdown" || st.Failure == "" {
			return errors.New("the failed node is still in Raft: " + st.State)
		}
		return nil
	})
	assert.Contains(t, leader.Status().Failure, errDiskGone.Error())
	require.NoError(t, testutil.CollectAndCompare(cluster.NewCollector(leader), strings.NewReader(fmt.Sprintf(`
# HELP equeue_cluster_failed 1 once the node left the cluster because its Raft log failed a write (reopen it).
# TYPE equeue_cluster_failed gauge
equeue_cluster_failed{node=%q} 1
`, leader.ID())), "equeue_cluster_failed"))
	_, err := leader.Append(context.Background(), &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "x", Body: []byte("x")}}})
	require.ErrorIs(t, err, equeue.ErrNotLeader, "the failed node refuses calls")

	c.waitOtherLeader(leader)
	b := c.resendUntilAnswered("d", equeue.Message{ID: "b", Body: []byte("b")})
	require.False(t, b.Duplicate)
	// It stays out while the others serve: never a candidate or leader.
	for deadline := time.Now().Add(1500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		require.Equal(t, "Shutdown", leader.Status().State)
	}

	c.reopenBroken(c.indexOf(leader))
	stored := c.storedEverywhere(t, "d")[0]
	require.GreaterOrEqual(t, len(stored), 2)
	assert.Equal(t, "w", stored[0])
	assert.Contains(t, stored, "b")
	assert.LessOrEqual(t, len(slices.DeleteFunc(slices.Clone(stored), func(s string) bool { return s != "a" })), 1,
		"the unknown send is stored at most once: %q", stored)
}
