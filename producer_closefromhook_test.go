package equeue_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// bodyHeldBroker wraps the engine with an Append of its own (so it owns
// no fast path) that holds the messages whose body is "held" until
// release is closed.
type bodyHeldBroker struct {
	*equeue.Engine
	release chan struct{}
}

func (b *bodyHeldBroker) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if string(req.Messages[0].Body) == "held" {
		<-b.release
	}
	return b.Engine.Append(ctx, req)
}

// closeWaiting reports whether a goroutine waits in Producer.Close for
// the SendAsync calls in flight.
func closeWaiting() bool {
	buf := make([]byte, 1<<24)
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "sync.(*WaitGroup).Wait(") && strings.Contains(g, "equeue.(*Producer).Close(") {
			return true
		}
	}
	return false
}

// waitOrDeadlock waits for ch, failing the test if nothing comes in a
// time far past any wait the test has: a detector of a deadlock, not a
// timing check.
func waitOrDeadlock[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("deadlock: %s", what)
		panic("unreachable")
	}
}

// Producer.Close called from a SendAsync's AfterSend hook does not wait
// for the send whose hook calls it, but it still waits for the sends
// still in flight, whose hooks run on another goroutine of the
// producer's meanwhile; the producer refuses new sends at once. Before,
// Close waited for its own send, which completes only once its hooks
// return: it never returned.
func TestProducer_CloseFromAnAfterSendHook(t *testing.T) {
	for _, window := range []bool{false, true} {
		name := map[bool]string{false: "engine", true: "window"}[window]
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			b := &bodyHeldBroker{Engine: e, release: make(chan struct{})}
			released := false
			defer func() {
				if !released {
					close(b.release)
				}
			}()
			var broker equeue.Broker = e
			if window {
				broker = b
			}
			closed := make(chan error, 1)
			hooked := make(chan string, 2)
			var p *equeue.Producer
			hook := equeue.Hooks{AfterSend: func(_ context.Context, m *equeue.Message, _ equeue.SendResult, _ error) {
				if string(m.Body) == "closer" {
					closed <- p.Close()
				}
				hooked <- string(m.Body)
			}}
			p = newProducer(t, broker, &equeue.ProducerOptions{Hooks: []equeue.Hooks{hook}})

			var held *equeue.SendFuture
			if window { // a send in flight when the hook calls Close
				held = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("held")})
			}
			closer := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("closer")})
			if window {
				eventually(t, time.Minute, closeWaiting, "Close from the hook waits for the held send")
				select {
				case <-closed:
					t.Fatal("Close returned while a send was in flight")
				default:
				}
				_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("late")}).Result(ctx)
				require.ErrorIs(t, err, equeue.ErrClosed, "the producer refuses sends once Close began")
				close(b.release)
				released = true
			}
			require.NoError(t, waitOrDeadlock(t, closed, "Close from an AfterSend hook never returned"))
			res, err := closer.Result(ctx)
			require.NoError(t, err)
			got := map[string]bool{}
			if window {
				hres, err := held.Result(ctx)
				require.NoError(t, err)
				assert.NotEqual(t, res.Offset, hres.Offset)
				got[<-hooked] = true
			}
			got[<-hooked] = true
			assert.True(t, got["closer"])
			assert.Equal(t, window, got["held"], "the held send's hooks ran")
			_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("after")}).Result(ctx)
			require.ErrorIs(t, err, equeue.ErrClosed)
			require.NoError(t, p.Close(), "Close again, from outside")
		})
	}
}

// A Close from outside, after a SendAsync's AfterSend hook called Close,
// waits for that hook to return and for its send's future, as Close
// waits for every send in flight; the hook may call Close again, which
// returns. Before, the Close from the hook had ended its send's count, so
// a Close from outside returned while the hook still ran and its future
// had not completed.
func TestProducer_CloseFromOutsideWaitsForAHookThatClosed(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	inHook := make(chan error, 2)
	release := make(chan struct{})
	var p *equeue.Producer
	hook := equeue.Hooks{AfterSend: func(context.Context, *equeue.Message, equeue.SendResult, error) {
		inHook <- p.Close()
		inHook <- p.Close() // again, from the same hook
		<-release
	}}
	p = newProducer(t, e, &equeue.ProducerOptions{Hooks: []equeue.Hooks{hook}})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	f := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("closer")})
	require.NoError(t, waitOrDeadlock(t, inHook, "Close from the AfterSend hook never returned"))
	require.NoError(t, waitOrDeadlock(t, inHook, "a second Close from the same hook never returned"))
	outside := make(chan error, 1)
	go func() { outside <- p.Close() }()
	eventually(t, time.Minute, func() bool { return len(outside) > 0 || closeWaiting() },
		"Close from outside returns or waits")
	select {
	case <-outside:
		t.Fatal("Close from outside returned while the AfterSend hook that called Close still ran")
	case <-f.Done():
		t.Fatal("the future completed before its AfterSend hook returned")
	default:
	}
	close(release)
	released = true
	require.NoError(t, waitOrDeadlock(t, outside, "Close from outside never returned"))
	select {
	case <-f.Done():
	default:
		t.Fatal("Close from outside returned before the hook's send completed")
	}
	_, err := f.Result(ctx)
	require.NoError(t, err)
}
