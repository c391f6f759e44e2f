package equeue_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

type ctxKey string

// sendTracer records StartSend calls; it stamps each message with a
// property and its context with a value the other hooks must see.
type sendTracer struct {
	mu    sync.Mutex
	calls []sendCall
	order *[]string
	name  string
}

type sendCall struct {
	n   int
	res []equeue.SendResult
	err error
}

func (s *sendTracer) hooks() equeue.Hooks {
	return equeue.Hooks{Trace: &equeue.TraceHooks{
		StartSend: func(ctx context.Context, msgs []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
			for _, m := range msgs {
				p := maps.Clone(m.Properties)
				if p == nil {
					p = map[string]string{}
				}
				p[s.name] = "stamped"
				m.Properties = p
			}
			return context.WithValue(ctx, ctxKey(s.name), true), func(res []equeue.SendResult, err error) {
				s.mu.Lock()
				defer s.mu.Unlock()
				s.calls = append(s.calls, sendCall{n: len(msgs), res: res, err: err})
				if s.order != nil {
					*s.order = append(*s.order, s.name)
				}
			}
		},
	}}
}

func (s *sendTracer) snapshot() []sendCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sendCall(nil), s.calls...)
}

// TestTraceHooks_Send checks that Send, SendAsync and SendBatch each run
// StartSend once, store the properties it set, run the plain hooks in its
// context and end it with the results; two tracers end in reverse order.
func TestTraceHooks_Send(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	var order []string
	a := &sendTracer{name: "a", order: &order}
	b := &sendTracer{name: "b", order: &order}
	var sawCtx sync.Map
	plain := equeue.Hooks{BeforeSend: func(ctx context.Context, m *equeue.Message) {
		sawCtx.Store(string(m.Body), ctx.Value(ctxKey("a")) == true && ctx.Value(ctxKey("b")) == true)
	}}
	p := newProducer(t, e, &equeue.ProducerOptions{Hooks: []equeue.Hooks{a.hooks(), b.hooks(), plain}})

	shared := map[string]string{"x": "y"}
	r1, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("one"), Properties: shared})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"x": "y"}, shared, "the caller's map is not written into")
	r2, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("two")}).Result(ctx)
	require.NoError(t, err)
	br, err := p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("three")}, {Topic: "t", Body: []byte("four")}})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "nope", Body: []byte("five")})
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)

	calls := a.snapshot()
	require.Len(t, calls, 4)
	assert.Equal(t, []equeue.SendResult{r1}, calls[0].res)
	assert.Equal(t, []equeue.SendResult{r2}, calls[1].res)
	require.Len(t, calls[2].res, 2)
	assert.Equal(t, 2, calls[2].n)
	for i, res := range calls[2].res {
		assert.Equal(t, br.IDs[i], res.ID)
		assert.Equal(t, br.Queue, res.Queue)
		assert.Equal(t, br.FirstOffset+int64(i), res.Offset)
	}
	assert.ErrorIs(t, calls[3].err, equeue.ErrTopicNotFound)
	assert.Equal(t, []string{"b", "a", "b", "a", "b", "a", "b", "a"}, order, "the last tracer started ends first")
	for _, body := range []string{"one", "two", "three", "four", "five"} {
		v, ok := sawCtx.Load(body)
		assert.True(t, ok && v.(bool), "BeforeSend of %q ran in the traced context", body)
	}

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: r1.Queue, Offset: r1.Offset, Max: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, map[string]string{"x": "y", "a": "stamped", "b": "stamped"}, res.Messages[0].Properties)
}

// handleTrace records what StartHandle saw and what its end was told.
type handleTrace struct {
	mu   sync.Mutex
	seen []handleCall
}

type handleCall struct {
	attempt int
	topic   string
	d       equeue.Delivery
	out     equeue.HandleOutcome
}

func (h *handleTrace) hooks() equeue.Hooks {
	return equeue.Hooks{Trace: &equeue.TraceHooks{
		StartHandle: func(ctx context.Context, m *equeue.Message, d equeue.Delivery) (context.Context, func(equeue.HandleOutcome)) {
			c := handleCall{attempt: m.Attempt, topic: m.Topic, d: d}
			return context.WithValue(ctx, ctxKey("h"), m.Attempt), func(o equeue.HandleOutcome) {
				c.out = o
				h.mu.Lock()
				h.seen = append(h.seen, c)
				h.mu.Unlock()
			}
		},
	}}
}

func (h *handleTrace) calls() []handleCall {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]handleCall(nil), h.seen...)
}

// TestTraceHooks_HandleOutcomes fails a message until it is dead-lettered
// through the retry topic, in-process and remote: the handler runs in the
// hook's context, and each attempt's end says what followed it.
func TestTraceHooks_HandleOutcomes(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		ht := &handleTrace{}
		var ctxOK sync.Map
		boom := errors.New("boom")
		startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "m1", Subscriptions: []equeue.Subscription{{Topic: "t"}},
			RetryDelays: []time.Duration{time.Millisecond}, MaxAttempts: 3, Hooks: []equeue.Hooks{ht.hooks()},
			Handler: func(ctx context.Context, m *equeue.Message) error {
				ctxOK.Store(m.Attempt, ctx.Value(ctxKey("h")) == m.Attempt)
				if string(m.Body) == "ok" {
					return nil
				}
				return boom
			}})
		p := newProducer(t, b, nil)
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("bad")})
		require.NoError(t, err)
		eventually(t, 20*time.Second, func() bool { return len(ht.calls()) == 3 }, "three attempts")
		_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("ok")})
		require.NoError(t, err)
		eventually(t, 20*time.Second, func() bool { return len(ht.calls()) == 4 }, "the good message")

		calls := ht.calls()
		// An attempt's end runs when its send-back returned; over remote the
		// next attempt can finish first. Compare the bad message's attempts
		// in attempt order (the good message was sent after all three).
		slices.SortStableFunc(calls[:3], func(a, b handleCall) int { return a.attempt - b.attempt })
		want := []equeue.Outcome{equeue.OutcomeRetry, equeue.OutcomeRetry, equeue.OutcomeDeadLetter, equeue.OutcomeHandled}
		for i, c := range calls {
			assert.Equal(t, "t", c.topic, "the handler's view names the original topic")
			assert.Equal(t, equeue.Delivery{Group: "g", Consumer: "m1", Model: equeue.Clustering}, c.d)
			assert.Equal(t, want[i], c.out.Outcome, "attempt %d", i)
			if i < 3 {
				assert.Equal(t, i, c.attempt)
				assert.Equal(t, i+1, c.out.Attempts)
				assert.ErrorIs(t, c.out.Err, boom)
			} else {
				assert.NoError(t, c.out.Err)
			}
		}
		assert.Equal(t, time.Millisecond, calls[0].out.Delay, "the retry's backoff")
		for a := range 3 {
			v, ok := ctxOK.Load(a)
			assert.True(t, ok && v.(bool), "attempt %d ran in the hook's context", a)
		}
	})
}

// TestTraceHooks_OrderlyRetriesInPlace: in orderly mode a failure is
// retried locally after RetryDelay, which the end reports.
func TestTraceHooks_OrderlyRetriesInPlace(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	ht := &handleTrace{}
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Orderly: true,
		RetryDelay: 2 * time.Millisecond, Hooks: []equeue.Hooks{ht.hooks()},
		Handler: func(_ context.Context, m *equeue.Message) error {
			if m.Attempt == 0 {
				return errors.New("first fails")
			}
			return nil
		}})
	_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 20*time.Second, func() bool { return len(ht.calls()) == 2 }, "two attempts")
	calls := ht.calls()
	assert.Equal(t, equeue.OutcomeRetryLocal, calls[0].out.Outcome)
	assert.Equal(t, 2*time.Millisecond, calls[0].out.Delay)
	assert.Equal(t, 1, calls[0].out.Attempts)
	assert.Equal(t, equeue.OutcomeHandled, calls[1].out.Outcome)
	assert.Equal(t, 1, calls[1].attempt)
}

// TestTraceHooks_OffAllocatesNothing: with no trace hooks, the tracing
// seams of Send and of handling allocate nothing.
func TestTraceHooks_OffAllocatesNothing(t *testing.T) {
	allocs := equeue.TraceSeamAllocs(&equeue.Message{Topic: "t"}, []equeue.Hooks{{BeforeSend: func(context.Context, *equeue.Message) {}}})
	assert.Zero(t, allocs)
}

func TestOutcome_String(t *testing.T) {
	for o, s := range map[equeue.Outcome]string{equeue.OutcomeHandled: "handled", equeue.OutcomeRetry: "retry",
		equeue.OutcomeRetryLocal: "retry-local", equeue.OutcomeDeadLetter: "dead-letter", equeue.OutcomeUnfinished: "unfinished", 99: "unknown"} {
		assert.Equal(t, s, o.String())
	}
}
