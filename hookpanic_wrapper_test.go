package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// unwrappingBroker is busyBroker, a wrapper that embeds an *Engine, saying
// what it wraps (equeue.BrokerWrapper).
type unwrappingBroker struct{ busyBroker }

func (b *unwrappingBroker) Unwrap() equeue.Broker { return b.Engine }

// selfWrapper is a wrapper whose Unwrap returns itself.
type selfWrapper struct{ *equeue.Engine }

func (b *selfWrapper) Unwrap() equeue.Broker { return b }

var _ equeue.BrokerWrapper = (*unwrappingBroker)(nil)

// TestHooks_PanicsThroughAWrapperAreCounted: the engine counts the hook
// panics that its in-process producers and consumers recover, but it knew
// its clients only by the broker they were opened on: an *Engine, or a
// Namespace of one. Those of a wrapper that embeds the engine (to check,
// count or refuse calls) were counted nowhere. A wrapper that says what it
// wraps (Unwrap) now has its clients' panics counted, a chain of wrappers
// too; one that does not stays a broker of its own, and a wrapper that
// unwraps to itself does not make the client loop.
func TestHooks_PanicsThroughAWrapperAreCounted(t *testing.T) {
	for _, c := range []struct {
		name    string
		wrap    func(*equeue.Engine) equeue.Broker
		counted uint64 // per panic
	}{
		{"unwrapping", func(e *equeue.Engine) equeue.Broker { return &unwrappingBroker{busyBroker{Engine: e}} }, 1},
		{"chain", func(e *equeue.Engine) equeue.Broker {
			return &chainWrapper{inner: &unwrappingBroker{busyBroker{Engine: e}}, Broker: e}
		}, 1},
		{"embedding only", func(e *equeue.Engine) equeue.Broker { return &busyBroker{Engine: e} }, 0},
		{"unwraps to itself", func(e *equeue.Engine) equeue.Broker { return &selfWrapper{Engine: e} }, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			b := c.wrap(e)

			p := newProducer(t, b, &equeue.ProducerOptions{Hooks: []equeue.Hooks{{
				AfterSend: func(context.Context, *equeue.Message, equeue.SendResult, error) { panic("boom after") },
			}}})
			_, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
			require.ErrorIs(t, err, equeue.ErrHookPanic)
			assert.Equal(t, c.counted, e.Stats().ConsumerHookPanics, "the producer's hook panic")

			handled := make(chan struct{}, 10)
			startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Hooks: []equeue.Hooks{{BeforeHandle: func(context.Context, *equeue.Message) { panic("boom before") }}},
				Handler: func(context.Context, *equeue.Message) error {
					handled <- struct{}{}
					return nil
				}})
			select {
			case <-handled:
			case <-time.After(waitLong):
				t.Fatal("the message was not handled")
			}
			// The panic is counted, if at all, before the handler runs.
			assert.Equal(t, 2*c.counted, e.Stats().ConsumerHookPanics, "the consumer's hook panic")
		})
	}
}

// chainWrapper wraps another wrapper; it serves calls through Broker.
type chainWrapper struct {
	equeue.Broker
	inner equeue.Broker
}

func (b *chainWrapper) Unwrap() equeue.Broker { return b.inner }
