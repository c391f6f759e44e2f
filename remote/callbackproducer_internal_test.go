package remote

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// A Producer over a remote client has no window of its own: the client
// owns AppendAsync, whose window bounds SendAsync. A SendAsync called from
// an AppendAsync callback of the client while that window is full does
// not wait for a slot only the callback's goroutine could free: its
// future reports ErrWindowFull at once (not sent).
func TestProducer_SendAsyncFromACallbackOnAFullWindowFailsAtOnce(t *testing.T) {
	for name, dial := range reentryClients() {
		t.Run(name, func(t *testing.T) {
			addr, _ := serveFake(t, routedFirstAnswered{})
			c := dial(t, addr)
			defer func() { require.NoError(t, c.Close()) }()
			p, err := equeue.NewProducer(c.(equeue.Broker), nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, p.Close()) }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			got := make(chan error, 1)
			c.AppendAsync(ctx, reentryReq, func(_ equeue.AppendResult, err error) {
				if err != nil {
					got <- err
					return
				}
				for range streamWindow {
					c.AppendAsync(ctx, reentryReq, func(equeue.AppendResult, error) {})
				}
				short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
				defer cancelShort()
				f := p.SendAsync(short, &equeue.Message{Topic: "t", Body: []byte("y")})
				select {
				case <-f.Done():
					_, err := f.Result(ctx)
					got <- err
				default:
					got <- assert.AnError // pending: it waits for a slot
				}
			})
			err = within(t, got, "the SendAsync from the callback")
			require.ErrorIs(t, err, ErrWindowFull, "the producer's send from a callback on a full window fails at once: %v", err)
			assert.ErrorIs(t, err, equeue.ErrWindowFull, "it matches the engine's sentinel")
		})
	}
}

// routedFirstAnswered is a firstAnsweredBroker that routes every topic to
// one writable queue, for a producer.
type routedFirstAnswered struct {
	firstAnsweredBroker
}

func (routedFirstAnswered) Route(_ context.Context, in *pb.RouteRequest) (*pb.RouteResponse, error) {
	return &pb.RouteResponse{Topic: in.GetTopic(), Queues: 1, Writable: []int32{0}}, nil
}

// appendOnly is a broker over a Client that overrides Append: it owns no
// AppendAsync (equeue.OwnsFastPaths), so a producer runs each SendAsync
// as Send on a goroutine, within its AsyncWindow.
type appendOnly struct {
	*Client
}

func (a appendOnly) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	return a.Client.Append(ctx, req)
}

// A producer over a broker without an AppendAsync of its own (a wrapper
// of a remote client) runs each SendAsync as Send on a goroutine, within
// its AsyncWindow. Called from an AppendAsync callback of that client
// while its window was full, SendAsync waited for a slot its sends in
// flight free once answered, and their answers were for the callback's
// goroutine to read: it waited until its context ended. It now reports
// equeue.ErrWindowFull at once (not sent); the send in flight completes.
func TestProducer_SendAsyncInItsFullWindowFromACallbackFailsAtOnce(t *testing.T) {
	e := openTopicEngine(t)
	l := &leaderless{}
	l.elected.Store(true)
	c, err := Dial(serveLeaderless(t, e, l), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	p, err := equeue.NewProducer(appendOnly{c}, &equeue.ProducerOptions{AsyncWindow: 1})
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	got := make(chan error, 1)
	first := make(chan *equeue.SendFuture, 1)
	c.AppendAsync(ctx, reentryReq, func(_ equeue.AppendResult, err error) {
		if err != nil {
			got <- err
			return
		}
		first <- p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("1")})
		// A bounded wait: without the fix, the error is its context's.
		short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
		defer cancelShort()
		_, err = p.SendAsync(short, &equeue.Message{Topic: "t", Body: []byte("2")}).Result(ctx)
		got <- err
	})
	err = within(t, got, "the SendAsync from the callback")
	require.ErrorIs(t, err, equeue.ErrWindowFull, "a send from a callback on the producer's full window fails at once: %v", err)
	_, err = within(t, first, "the first send").Result(ctx)
	require.NoError(t, err, "the send in flight is stored")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Max: 10})
	require.NoError(t, err)
	assert.Len(t, res.Messages, 2, "the client's append and the first send, not the refused one")
}
