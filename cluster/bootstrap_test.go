package cluster_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/internal/testport"
)

// A node whose directory holds Raft state starts from the configuration
// it stores: Bootstrap and Peers are for a new directory. Opened again
// with Bootstrap and other Peers, it starts no second cluster of them (a
// one-node cluster stays one, and leads), and its log says it ignored
// them, naming the configuration it stores. Before, it ignored them
// without a word, and an operator who changed Peers saw nothing of it.
func TestOpen_BootstrapOfADirectoryWithRaftStateIsIgnoredAndSaid(t *testing.T) {
	c := newCluster(t, 1, nil)
	c.createTopic(t, "t", 1)
	c.stop(0)

	logs := &logBuffer{}
	o := nodeOptions(c.id(0), c.addrs[0])
	o.Logger = slog.New(slog.NewTextHandler(logs, nil))
	o.Bootstrap = true
	o.Peers = []cluster.Peer{{ID: c.id(0), RaftAddr: c.addrs[0]}, {ID: "n9", RaftAddr: testport.Addr(t)}}
	n, err := cluster.Open(c.dirs[0], o)
	require.NoError(t, err)
	c.nodes[0] = n
	c.waitLeader()
	s := n.Status()
	require.Len(t, s.Servers, 1, "the stored configuration stands")
	require.Equal(t, c.id(0), s.Servers[0].ID)
	require.Contains(t, logs.String(), "Bootstrap and Peers ignored")
	require.Contains(t, logs.String(), c.id(0)+"="+c.addrs[0])
}
