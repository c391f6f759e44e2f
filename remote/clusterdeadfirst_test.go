package remote_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// A ClusterClient given a dead node first failed its first admin call and
// its first append with ErrUnavailable (connection refused) at once,
// without trying the next node: only a node whose connection was already
// marked failing was skipped. A call that provably never left the client
// is now tried on the next node.
func TestClusterClient_DeadFirstNodeIsSkipped(t *testing.T) {
	calls := map[string]func(cc *remote.ClusterClient) error{
		"CreateTopic": func(cc *remote.ClusterClient) error { return cc.CreateTopic(ctxT(t), "made", 1) },
		"Append": func(cc *remote.ClusterClient) error {
			_, err := cc.Append(ctxT(t), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
			return err
		},
		"AppendAsync": func(cc *remote.ClusterClient) error {
			done := make(chan error, 1)
			cc.AppendAsync(ctxT(t), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}},
				func(_ equeue.AppendResult, err error) { done <- err })
			return <-done
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
			live := startServer(t, e, "", nil)
			dead := freeAddr(t) // nothing listens: connection refused
			cc, err := remote.DialCluster([]string{dead, live.addr}, nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, cc.Close()) }()

			require.NoError(t, call(cc), "the live node was not tried")
			assert.Equal(t, live.addr, cc.Leader())
			if name == "CreateTopic" {
				_, err := e.Topic(ctxT(t), "made")
				require.NoError(t, err)
			} else {
				res, err := e.Pull(ctxT(t), &equeue.PullRequest{Topic: "t", Queue: 0, Max: 10})
				require.NoError(t, err)
				assert.Len(t, res.Messages, 1, "stored once")
			}
		})
	}
}
