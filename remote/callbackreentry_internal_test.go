package remote

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// firstAnsweredBroker answers the first stream append of each stream
// stored and holds every later one unanswered.
type firstAnsweredBroker struct {
	pb.UnimplementedBrokerServer
}

func (firstAnsweredBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	answered := false
	for {
		in, err := st.Recv()
		if err != nil {
			return err
		}
		if answered || len(in.GetAppends()) == 0 {
			continue
		}
		answered = true
		a := in.GetAppends()[0]
		out := &pb.AppendStreamResponse{Results: []*pb.StreamAppendResult{{Seq: a.GetSeq(), Response: &pb.AppendResponse{Ids: []string{"id-1"}}}}}
		if err := st.Send(out); err != nil {
			return err
		}
	}
}

// reentryClient is a Client or a ClusterClient whose leader is the broker
// at addr (its appends go on that node's stream).
type reentryClient interface {
	AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error))
	Close() error
}

func reentryClients() map[string]func(t *testing.T, addr string) reentryClient {
	return map[string]func(t *testing.T, addr string) reentryClient{
		"Client": func(t *testing.T, addr string) reentryClient {
			c, err := Dial(addr, nil)
			require.NoError(t, err)
			return c
		},
		"ClusterClient": func(t *testing.T, addr string) reentryClient {
			cc, err := DialCluster([]string{addr}, nil)
			require.NoError(t, err)
			cc.redirect(addr, addr)
			return cc
		},
	}
}

// within fails the test unless ch yields before a generous bound (a
// deadlock, not a slow machine, would pass it).
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s: still waiting after a minute (deadlock)", what)
		panic("unreachable")
	}
}

var reentryReq = &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}}

// A callback that appended while the window was full waited for a slot
// on the goroutine that reads the stream's answers, which therefore read
// none: only its context ending freed it. Such an append now fails at
// once with ErrWindowFull (not sent).
func TestAppendAsync_FromACallbackOnAFullWindowFailsAtOnce(t *testing.T) {
	for name, dial := range reentryClients() {
		t.Run(name, func(t *testing.T) {
			addr, _ := serveFake(t, firstAnsweredBroker{})
			c := dial(t, addr)
			defer func() { require.NoError(t, c.Close()) }()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			got := make(chan error, 1)
			c.AppendAsync(ctx, reentryReq, func(_ equeue.AppendResult, err error) {
				if err != nil {
					got <- err
					return
				}
				// Fill the window with appends the broker holds.
				for range streamWindow {
					c.AppendAsync(ctx, reentryReq, func(equeue.AppendResult, error) {})
				}
				// A bounded wait: without the fix, the error is ctx's.
				short, cancelShort := context.WithTimeout(ctx, 10*time.Second)
				defer cancelShort()
				c.AppendAsync(short, reentryReq, func(_ equeue.AppendResult, err error) { got <- err })
			})
			err := within(t, got, "the append from the callback")
			require.ErrorIs(t, err, ErrWindowFull, "an append from a callback on a full window fails at once: %v", err)
			assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "it was not sent")
		})
	}
}

// A callback that called Close deadlocked: Close waits for the stream's
// reader, and for the AppendAsync calls in progress, and the callback
// ran on one of them. Close from a callback now returns; a Close from
// elsewhere then waits for the close to be done.
func TestClose_FromACallbackReturns(t *testing.T) {
	for name, dial := range reentryClients() {
		t.Run(name+"/answered", func(t *testing.T) {
			addr, _ := serveFake(t, firstAnsweredBroker{})
			c := dial(t, addr)
			closed := make(chan error, 1)
			c.AppendAsync(context.Background(), reentryReq, func(_ equeue.AppendResult, err error) {
				require.NoError(t, err)
				closed <- c.Close()
			})
			require.NoError(t, within(t, closed, "Close from the callback of an answered append"))
			require.NoError(t, c.Close())
			var after error
			c.AppendAsync(context.Background(), reentryReq, func(_ equeue.AppendResult, err error) { after = err })
			require.ErrorIs(t, after, equeue.ErrClosed)
		})
		t.Run(name+"/reported by Close", func(t *testing.T) {
			addr, _ := serveFake(t, firstAnsweredBroker{})
			c := dial(t, addr)
			first := make(chan struct{})
			c.AppendAsync(context.Background(), reentryReq, func(equeue.AppendResult, error) { close(first) })
			<-first
			closed := make(chan error, 1)
			// Held by the broker: Close reports it, and its callback calls
			// Close again.
			c.AppendAsync(context.Background(), reentryReq, func(_ equeue.AppendResult, err error) {
				assert.Error(t, err, "not answered: reported by Close")
				closed <- c.Close()
			})
			done := make(chan error, 1)
			go func() { done <- c.Close() }()
			require.NoError(t, within(t, closed, "Close from a callback Close runs"))
			require.NoError(t, within(t, done, "Close"))
		})
		t.Run(name+"/refused at once", func(t *testing.T) {
			addr, _ := serveFake(t, firstAnsweredBroker{})
			c := dial(t, addr)
			closed := make(chan error, 1)
			go c.AppendAsync(context.Background(), nil, func(_ equeue.AppendResult, err error) {
				assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
				closed <- c.Close()
			})
			require.NoError(t, within(t, closed, "Close from the callback of a refused append"))
			require.NoError(t, c.Close())
		})
	}
}
