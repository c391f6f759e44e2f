package watermill_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// Handlers held between their check of the subscription's stop and their
// send for longer than both of Consumer.Close's waits (ShutdownTimeout
// each), so that the subscription's channel is closed meanwhile, do not
// send on the closed channel (a panic, which the consumer turns into the
// handler's error): they hand nothing out. A select picks one of its ready
// cases at random, the send among them, so many handlers are held: each
// one that picked the send panicked.
func TestSubscriber_HandOutStalledPastTheChannelsCloseDoesNotPanic(t *testing.T) {
	const n = 24
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	var heldCount atomic.Int32
	allHeld, release := make(chan struct{}), make(chan struct{})
	restore := eqwm.SetHandOutStall(func(m *message.Message) {
		if !strings.HasPrefix(string(m.Payload), "stalled") {
			return
		}
		if heldCount.Add(1) == n {
			close(allHeld)
		}
		<-release
	})
	defer restore()
	results := make(chan error, n)
	o := fastConsumer
	o.Hooks = []equeue.Hooks{{AfterHandle: func(_ context.Context, _ *equeue.Message, err error, _ time.Duration) {
		results <- err
	}}}
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, Consumer: o, Unordered: true, Concurrency: n})
	subCtx, stop := context.WithCancel(ctxT(t))
	defer stop()
	ch, err := sub.Subscribe(subCtx, "stalled")
	require.NoError(t, err)
	for i := range n {
		require.NoError(t, pub.Publish("stalled", message.NewMessage(wm.NewUUID(), []byte(fmt.Sprint("stalled", i)))))
	}
	select {
	case <-allHeld:
	case <-time.After(time.Minute):
		t.Fatalf("%d of %d handlers held", heldCount.Load(), n)
	}
	stop() // the subscription stops; its consumer gives the held handlers up
	closed := func() bool {
		select {
		case _, ok := <-ch: // the held handlers are not in their send: nothing to receive
			require.False(t, ok, "a message was handed out")
			return true
		default:
			return false
		}
	}
	for deadline := time.Now().Add(time.Minute); !closed(); time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the subscription's channel is not closed")
	}
	close(release)
	panicked := 0
	for range n {
		select {
		case herr := <-results:
			if errors.Is(herr, equeue.ErrHandlerPanic) {
				panicked++
			}
		case <-time.After(time.Minute):
			t.Fatal("a held handler did not return")
		}
	}
	assert.Zero(t, panicked, "handlers that sent on the closed channel")
}
