package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bench --server takes a cluster's comma-separated nodes, as the other
// commands do, through the client that follows their leader. Before, it
// dialled the whole list as one address and failed. The list names a
// follower first, so that a bench that stayed on the first node would
// fail: each round checks that n2 followed n1 in one term around the
// bench, and one an election cut into is made again.
func TestBench_ServerListFollowsTheLeader(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	n1 := startClusterNode(t, base, "n1", true)
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		s, ok := n1.status(t)
		return ok && s.Serving
	})
	n2 := startClusterNode(t, base, "n2", false)
	ok(t, "cluster", "add", n2.id, n2.raft, "--admin", n1.admin)
	all := n2.listen + "," + n1.listen + "," + freePort(t) // the last: a node not started yet
	for round := 1; ; round++ {
		require.LessOrEqual(t, round, 5, "an election cut into every round")
		lead(t, n1, n1, n2)
		before, ok1 := n2.status(t)
		r := runBounded(t, nil, "--server", all, "bench", "--json", "--count", "50", "--consumers", "1", "--baseline=false")
		after, ok2 := n2.status(t)
		if !ok1 || !ok2 || before.State != "Follower" || before.LeaderID != "n1" || after.LeaderID != "n1" || after.Term != before.Term {
			continue
		}
		require.Equal(t, 0, r.code, "%v", r)
		b := decode[benchJSON](t, r.stdout)
		assert.Equal(t, "server", b.Mode)
		assert.Equal(t, all, b.Target)
		assert.EqualValues(t, 50, b.Messages)
		if assert.NotNil(t, b.Consume) {
			assert.EqualValues(t, 50, b.Consume.Messages)
		}
		return
	}
}
