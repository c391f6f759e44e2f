package remote_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
	"github.com/equeue-go/equeue/store"
)

// Scenario 7: idle consumers' long-polls must not crowd out producers.
// With MaxInFlight 1, long-polls on many queues and a waiting heartbeat
// leave the one unary slot free for an Append.
func TestFlow_LongPollsDoNotCountAgainstMaxInFlight(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	_, _, addr, entered := interceptedServer(t, e, &remote.ServerOptions{MaxInFlight: 1})
	c := dial(t, addr, nil)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 4)
	for q := range 4 {
		go func() {
			_, err := c.Pull(pctx, &equeue.PullRequest{Topic: "t", Queue: q, Offset: 0, Wait: 30 * time.Second})
			done <- err
		}()
		waitEntered(t, entered, pb.Broker_Pull_FullMethodName)
	}
	// A call that cannot wait for the slot shows whether one was free.
	actx, acancel := context.WithTimeout(ctx, 5*time.Second)
	defer acancel()
	res, err := c.Append(actx, &equeue.AppendRequest{Topic: "t", Queue: 3, Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err, "a producer is refused while consumers only wait")
	assert.Equal(t, int64(0), res.FirstOffset)
	// The append woke the long-poll of queue 3; the others end on cancel.
	require.NoError(t, <-done)
	cancel()
	for range 3 {
		assert.ErrorIs(t, <-done, context.Canceled)
	}
}

// The unary bound still holds, ErrBusy is what a refused call reports once
// its context ends, and the client retries it by itself until a slot frees.
func TestFlow_BusyIsRetriedByTheClient(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	refused := make(chan string, 64)
	log := slog.New(&busyLog{refused: refused})
	_, _, addr, _ := interceptedServer(t, e, &remote.ServerOptions{MaxInFlight: 1, Logger: log})
	c := dial(t, addr, nil)

	// Hold the only slot with an append whose store write waits.
	release := make(chan struct{})
	writing := make(chan struct{}, 1)
	fs.OnWrite(func(*store.Batch) error {
		select {
		case writing <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
	held := make(chan error, 1)
	go func() {
		_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
		held <- err
	}()
	<-writing          // the append (on the client's AppendStream) holds the slot
	t.Cleanup(func() { // a failed check must not leave the writer waiting
		select {
		case <-release:
		default:
			close(release)
		}
	})

	// The server refuses a call over the bound (seen without the client's retry).
	_, err := rawClient(t, addr).ListTopics(ctx, &pb.ListTopicsRequest{})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Equal(t, pb.Broker_ListTopics_FullMethodName, <-refused)
	assert.ErrorIs(t, remote.FromStatus(err), remote.ErrBusy)
	assert.ErrorIs(t, remote.FromStatus(err), equeue.ErrBusy)

	// A unary call with time to spare is retried until the slot frees.
	retried := make(chan error, 1)
	go func() { retried <- c.CreateTopic(ctx, "u", 1) }()
	assert.Equal(t, pb.Broker_CreateTopic_FullMethodName, <-refused, "refused at least once")
	// An append waits for room on the client's append stream (the broker
	// told it its bound) instead of being refused.
	appended := make(chan error, 1)
	go func() {
		_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("b")}}})
		appended <- err
	}()
	select {
	case err := <-retried:
		t.Fatalf("the call ended while the slot was held: %v", err)
	case err := <-appended:
		t.Fatalf("the append ended while the slot was held: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	fs.OnWrite(nil)
	close(release)
	require.NoError(t, <-held)
	require.NoError(t, <-retried, "the client retries ErrBusy")
	require.NoError(t, <-appended)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), info.Queues[0].MaxOffset, "each append stored once")
	_, err = e.Topic(ctx, "u")
	assert.NoError(t, err, "the retried call was made once it had room")
}

// A long-poll beyond MaxLongPolls is refused like any call over its bound.
func TestFlow_MaxLongPolls(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, _, addr, entered := interceptedServer(t, e, &remote.ServerOptions{MaxLongPolls: 1})
	c := dial(t, addr, nil)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Pull(pctx, &equeue.PullRequest{Topic: "t", Wait: 30 * time.Second})
		done <- err
	}()
	waitEntered(t, entered, pb.Broker_Pull_FullMethodName)
	_, err := rawClient(t, addr).Pull(ctx, &pb.PullRequest{Topic: "t", Wait: durationpb.New(30 * time.Second)})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	// A pull that does not wait is a unary call and goes through.
	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullNoNewMessage, res.Status)
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)
}

// rawClient is a plain gRPC client of addr: no retry of ErrBusy.
func rawClient(t *testing.T, addr string) pb.BrokerClient {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return pb.NewBrokerClient(cc)
}

// busyLog is a slog handler that reports the methods of busy refusals.
type busyLog struct{ refused chan<- string }

func (h *busyLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *busyLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *busyLog) WithGroup(string) slog.Handler            { return h }
func (h *busyLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "call refused: busy" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "method" {
			select {
			case h.refused <- a.Value.String():
			default:
			}
		}
		return true
	})
	return nil
}
