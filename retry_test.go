package equeue_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRetry_ThroughRetryTopicWithBackoff fails a message twice: each retry
// goes through %RETRY%<group>, waits its backoff and reaches the handler
// with its original topic, queue, offset, properties and attempt count.
func TestRetry_ThroughRetryTopicWithBackoff(t *testing.T) {
	forTransports(t, testRetry_ThroughRetryTopicWithBackoff)
}

func testRetry_ThroughRetryTopicWithBackoff(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	type seen struct {
		m  equeue.Message
		at time.Time
	}
	var mu sync.Mutex
	var got []seen
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t", Filter: "A"}},
		RetryDelays: []time.Duration{100 * time.Millisecond, 300 * time.Millisecond},
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			got = append(got, seen{*m, time.Now()})
			mu.Unlock()
			if m.Attempt < 2 {
				return errors.New("not yet")
			}
			return nil
		}})
	p := newProducer(t, b, nil)
	r, err := p.Send(ctx, &equeue.Message{Topic: "t", Tag: "A", Keys: []string{"k"}, Body: []byte("b"), Properties: map[string]string{"x": "y"}})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 3 }, "three deliveries")
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, got, 3)
	for i, s := range got {
		assert.Equal(t, i, s.m.Attempt)
		assert.Equal(t, "t", s.m.Topic)
		assert.Equal(t, r.Queue, s.m.Queue)
		assert.Equal(t, r.Offset, s.m.Offset)
		assert.Equal(t, r.ID, s.m.ID)
		assert.Equal(t, "A", s.m.Tag)
		assert.Equal(t, map[string]string{"x": "y"}, s.m.Properties)
		assert.Equal(t, []byte("b"), s.m.Body)
	}
	assert.GreaterOrEqual(t, got[1].at.Sub(got[0].at), 100*time.Millisecond, "first backoff")
	assert.GreaterOrEqual(t, got[2].at.Sub(got[1].at), 300*time.Millisecond, "second backoff")
	info, err := e.Topic(ctx, equeue.RetryTopic("g"))
	require.NoError(t, err)
	assert.Equal(t, int64(2), info.Queues[0].MaxOffset, "both retries went through the retry topic")
}

func TestRetry_HandlerAsksForDelayOrDeadLetter(t *testing.T) {
	forTransports(t, testRetry_HandlerAsksForDelayOrDeadLetter)
}

func testRetry_HandlerAsksForDelayOrDeadLetter(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var tries sync.Map
	var okCount atomic.Int32
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		RetryDelays: []time.Duration{time.Hour}, // only an explicit RetryAfter can make a retry quick
		Handler: func(_ context.Context, m *equeue.Message) error {
			v, _ := tries.LoadOrStore(string(m.Body), new(atomic.Int32))
			n := v.(*atomic.Int32).Add(1)
			switch string(m.Body) {
			case "later":
				if n == 1 {
					return equeue.RetryAfter(50*time.Millisecond, errors.New("busy"))
				}
				okCount.Add(1)
				return nil
			case "bad":
				return equeue.DeadLetter(errors.New("malformed"))
			}
			return nil
		}})
	p := newProducer(t, b, nil)
	for _, b := range []string{"later", "bad"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(b)})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool { return okCount.Load() == 1 }, "RetryAfter redelivers quickly")
	// The dead letter is stored by a send-back of its own, which need not
	// be done when the other message's retry is (over a cluster it is a
	// Raft commit).
	var dls []equeue.DLQEntry
	eventually(t, 10*time.Second, func() bool {
		var err error
		dls, err = e.DeadLetters(ctx, "g", 0, 10)
		require.NoError(t, err)
		return len(dls) > 0
	}, "the dead letter stored")
	require.Len(t, dls, 1)
	assert.Equal(t, "bad", string(dls[0].Message.Body))
	assert.Contains(t, dls[0].LastError, "malformed")
	assert.Equal(t, 1, dls[0].Attempts, "no further attempt after DeadLetter")
	v, _ := tries.Load("bad")
	assert.Equal(t, int32(1), v.(*atomic.Int32).Load())
}

// failingRetryBroker refuses send-backs to retry topics while fail is set.
type failingRetryBroker struct {
	*equeue.Engine
	fail atomic.Bool
	hits atomic.Int32
}

func (b *failingRetryBroker) SendBack(ctx context.Context, req *equeue.SendBackRequest) (equeue.SendBackResult, error) {
	if b.fail.Load() && !req.DeadLetter {
		b.hits.Add(1)
		return equeue.SendBackResult{}, errors.New("retry topic unavailable")
	}
	return b.Engine.SendBack(ctx, req)
}

func TestRetry_SendBackFailureRetriesLocally(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &failingRetryBroker{Engine: e}
	b.fail.Store(true)
	var calls atomic.Int32
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, SendBackRetryDelay: 20 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error {
			if calls.Add(1) < 3 {
				return errors.New("fail")
			}
			return nil
		}})
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return calls.Load() == 3 }, "retried locally after each failed send-back")
	assert.Equal(t, int32(2), b.hits.Load())
	eventually(t, 10*time.Second, func() bool { return startedCommit(t, e, "g") == 1 }, "and then committed")
}

func TestRetry_StuckHandlerIsSentBack(t *testing.T) {
	forTransports(t, testRetry_StuckHandlerIsSentBack)
}

func testRetry_StuckHandlerIsSentBack(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	release := make(chan struct{})
	defer close(release)
	var calls atomic.Int32
	c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		ConsumeTimeout: 200 * time.Millisecond, RetryDelays: []time.Duration{10 * time.Millisecond}, HandoffTimeout: 50 * time.Millisecond,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if calls.Add(1) == 1 {
				select { // stuck on the first delivery
				case <-release:
				case <-ctx.Done():
				}
				return nil
			}
			return nil
		}})
	p := newProducer(t, b, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("y")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return calls.Load() == 3 }, "the stuck message was redelivered")
	waitWindow(t, c, "t", 2)
	require.NoError(t, c.Commit(ctx))
	assert.Equal(t, int64(2), startedCommit(t, e, "g"), "the stuck message no longer pins the offset")
}

func TestDLQ_ListAndRedrive(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	var fail atomic.Bool
	fail.Store(true)
	col := newCollector()
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if fail.Load() {
				return equeue.DeadLetter(errors.New("db down"))
			}
			return col.handler("c")(ctx, m)
		}})
	p := newProducer(t, e, nil)
	sent := map[string]equeue.SendResult{}
	for _, b := range []string{"a", "b", "c", "d"} {
		r, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{b}, Body: []byte(b), Properties: map[string]string{"k": b}})
		require.NoError(t, err)
		sent[b] = r
	}
	var dls []equeue.DLQEntry
	eventually(t, 10*time.Second, func() bool {
		var err error
		dls, err = e.DeadLetters(ctx, "g", 0, 10)
		require.NoError(t, err)
		return len(dls) == 4
	}, "four dead letters")
	for _, dl := range dls {
		want := sent[string(dl.Message.Body)]
		assert.Equal(t, "t", dl.Message.Topic)
		assert.Equal(t, want.Queue, dl.Message.Queue)
		assert.Equal(t, want.Offset, dl.Message.Offset)
		assert.Equal(t, want.ID, dl.Message.ID)
		assert.Contains(t, dl.LastError, "db down")
		assert.False(t, dl.Redriven)
	}
	fail.Store(false)
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{dls[1].Offset}})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	eventually(t, 10*time.Second, func() bool { return col.count() == 1 }, "one redriven")
	require.NoError(t, c.Close())
	e = reopen()
	n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Equal(t, 3, n, "the one already redriven is skipped, also after a restart")
	n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Zero(t, n)
	col2 := newCollector()
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: col2.handler("c")})
	eventually(t, 10*time.Second, func() bool { return col2.count() == 3 }, "the rest redriven")
	got := col2.snapshot()
	first := string(dls[1].Message.Body) // redriven on its own above
	for b, r := range sent {
		if b != first {
			assert.Contains(t, got, r.ID, "dead letter %q redriven", b)
		}
	}
	_, err = e.Redrive(ctx, "g", equeue.RedriveRequest{})
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
	_, err = e.Redrive(ctx, "nope", equeue.RedriveRequest{All: true})
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	_, err = e.Redrive(ctx, "g", equeue.RedriveRequest{From: 2, To: 99})
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
}

func TestRetry_BroadcastRetriesLocally(t *testing.T) {
	forTransports(t, testRetry_BroadcastRetriesLocally)
}

func testRetry_BroadcastRetriesLocally(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var calls atomic.Int32
	startConsumer(t, b, equeue.ConsumerOptions{Group: "b", ID: "m1", Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}},
		RetryDelay: 10 * time.Millisecond, From: equeue.ConsumeFromEarliest,
		Handler: func(_ context.Context, m *equeue.Message) error {
			if calls.Add(1) == 1 {
				return errors.New("first attempt fails")
			}
			assert.Equal(t, 1, m.Attempt)
			return nil
		}})
	p := newProducer(t, b, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return calls.Load() == 2 }, "retried locally")
	_, err = e.Topic(ctx, equeue.RetryTopic("b"))
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "broadcast groups have no retry topic")
}
