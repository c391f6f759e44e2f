package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bench --server takes a cluster's comma-separated nodes, as the other
// commands do, through the client that follows their leader. Before, it
// dialled the whole list as one address and failed.
func TestBench_ServerListFollowsTheLeader(t *testing.T) {
	t.Parallel()
	n1 := startClusterNode(t, t.TempDir(), "n1", true)
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		s, ok := n1.status(t)
		return ok && s.Serving
	})
	all := n1.listen + "," + freePort(t) // a node not started yet
	r := runBounded(t, nil, "--server", all, "bench", "--json", "--count", "50", "--consumers", "1", "--baseline=false")
	require.Equal(t, 0, r.code, "%v", r)
	b := decode[benchJSON](t, r.stdout)
	assert.Equal(t, "server", b.Mode)
	assert.Equal(t, all, b.Target)
	assert.EqualValues(t, 50, b.Messages)
	if assert.NotNil(t, b.Consume) {
		assert.EqualValues(t, 50, b.Consume.Messages)
	}
}
