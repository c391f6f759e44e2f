package remote_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// A consumer's pull whose answer was on its way while the client deleted
// the topic keeps nothing of it: the client dropped what it read ahead of
// the topic when the delete returned, and an answer that comes back after
// must not bring it back. It did: the next pull under the grant was
// handed messages of the deleted topic from the read-ahead, where the
// broker answers ErrTopicNotFound.
func TestReadAhead_PullAnsweredAcrossDeleteTopicKeepsNothing(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	var freed sync.Once
	free := func() { freed.Do(func() { close(release) }) }
	defer free() // a failing test does not leave the call held
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if info.FullMethod == pb.Broker_Pull_FullMethodName && armed.CompareAndSwap(true, false) {
			close(held) // answered: held on its way back
			<-release
		}
		return resp, err
	}))
	srv.Register(gs)
	c := dial(t, serveOwn(t, srv, gs), &remote.ClientOptions{PullAhead: 16})

	msgs := make([]*equeue.Message, 40)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: []byte("x")}
	}
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	g := a.Queues[0]

	armed.Store(true)
	type pulled struct {
		res equeue.PullResult
		err error
	}
	done := make(chan pulled, 1)
	go func() {
		res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: g.Queue, Group: "g", Member: "m", Epoch: g.Epoch, Max: 4, Wait: 5 * time.Second})
		done <- pulled{res, err}
	}()
	<-held
	require.NoError(t, c.DeleteTopic(ctx, "t"))
	free()
	p := <-done
	require.NoError(t, p.err, "answered before the delete")
	require.Len(t, p.res.Messages, 4)

	assert.Empty(t, remote.ReadAheadTopics(c), "nothing is kept of the deleted topic")
	_, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: g.Queue, Group: "g", Member: "m", Epoch: g.Epoch, Offset: p.res.NextOffset, Max: 4, Wait: 5 * time.Second})
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
}
