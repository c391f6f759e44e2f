package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// pausedWritable is an engine whose SetQueueWritable holds each call until
// its context ends, as a paused leader holds the calls it took.
type pausedWritable struct{ *equeue.Engine }

func (pausedWritable) SetQueueWritable(ctx context.Context, _ string, _ int, _ bool) error {
	<-ctx.Done()
	return ctx.Err()
}

// A ClusterClient forgets the leader a call sent to it timed out on (a
// paused leader holds calls until they time out), so that the next call
// asks the other nodes. A call safe to repeat whose deadline passed with
// its request at the leader is of unknown outcome (ErrIndeterminate) since
// such calls report it; that outcome was taken for one the next leader
// answers, and the slow leader was kept.
func TestClusterClient_RepeatableCallTimedOutAtTheLeaderForgetsIt(t *testing.T) {
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	srv, err := remote.NewBackendServer(pausedWritable{e}, nil)
	require.NoError(t, err)
	s := serve(t, srv, "")
	cc, err := remote.DialCluster([]string{s.addr}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	_, err = cc.Route(ctxT(t), "t")
	require.NoError(t, err)
	require.Equal(t, s.addr, cc.Leader())

	ctx, cancel := context.WithTimeout(ctxT(t), 200*time.Millisecond)
	defer cancel()
	err = cc.SetQueueWritable(ctx, "t", 0, false)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Empty(t, cc.Leader(), "the leader that held the call is forgotten")
}
