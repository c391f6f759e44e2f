package equeue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// ttlMargin is how long the short-lived messages of these tests live: long
// enough to be pulled alive on a loaded machine, short enough to wait for.
const ttlMargin = time.Second

// bodyLog records the bodies a handler got, in order.
type bodyLog struct {
	mu     sync.Mutex
	bodies []string
}

func (l *bodyLog) add(m *equeue.Message) {
	l.mu.Lock()
	l.bodies = append(l.bodies, string(m.Body))
	l.mu.Unlock()
}

func (l *bodyLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.bodies...)
}

func (l *bodyLog) has(body string) bool {
	for _, b := range l.all() {
		if b == body {
			return true
		}
	}
	return false
}

// waitPast waits until t has passed.
func waitPast(t time.Time) {
	for !time.Now().After(t) {
		time.Sleep(time.Until(t) + time.Millisecond)
	}
}

// An orderly consumer does not retry a message in place once it expired:
// the handler that failed it was its last, it is not dead-lettered, and
// it is counted as expired once.
func TestTTL_OrderlyRetryStopsAtExpiry(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	expires := time.Now().Add(ttlMargin)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("short"), ExpiresAt: expires})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("next")})
	require.NoError(t, err)
	log := &bodyLog{}
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Orderly: true, LocalRetryDelay: 10 * time.Millisecond, MaxAttempts: 3,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			log.add(m)
			if string(m.Body) == "short" {
				waitPast(expires) // its retry would come after its expiry
				return errors.New("fail")
			}
			return nil
		}})
	eventually(t, 10*time.Second, func() bool { return log.has("next") }, "the next message handled")
	got := log.all()
	assert.LessOrEqual(t, len(got)-1, 1, "the expired message is not handled again: %v", got)
	assert.Equal(t, uint64(1), e.Stats().ExpiredMessages, "counted as expired once")
	_, err = e.Topic(ctx, equeue.DLQTopic("g"))
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "an expired message is not dead-lettered")
}

// A message that expires while it waits in a concurrent consumer's cache
// (pulled alive, behind a slow handler) is not handed to the handler.
func TestTTL_CachedMessageExpiresUnhandled(t *testing.T) {
	for _, batch := range []bool{false, true} {
		t.Run(map[bool]string{false: "handler", true: "batch"}[batch], func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			p := newProducer(t, e, nil)
			expires := time.Now().Add(ttlMargin)
			for _, m := range []*equeue.Message{{Body: []byte("slow")}, {Body: []byte("short"), ExpiresAt: expires}, {Body: []byte("last")}} {
				m.Topic = "t"
				_, err := p.Send(ctx, m)
				require.NoError(t, err)
			}
			log := &bodyLog{}
			handle := func(m *equeue.Message) {
				log.add(m)
				if string(m.Body) == "slow" {
					waitPast(expires)
				}
			}
			o := equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Concurrency: 1}
			if batch {
				o.BatchSize = 1
				o.BatchHandler = func(ctx context.Context, msgs []*equeue.Message) error {
					for _, m := range msgs {
						handle(m)
					}
					return nil
				}
			} else {
				o.Handler = func(ctx context.Context, m *equeue.Message) error { handle(m); return nil }
			}
			startConsumer(t, e, o)
			eventually(t, 10*time.Second, func() bool { return log.has("last") }, "the last message handled")
			assert.NotContains(t, log.all(), "short", "the expired message is not handed out")
			assert.Equal(t, uint64(1), e.Stats().ExpiredMessages, "counted as expired once")
		})
	}
}

// A lower-priority message that expires while it waits for the higher
// lane's messages to be handled is not handed to the handler.
func TestPriority_LowerLaneExpiredWhileWaitingIsSkipped(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	p := newProducer(t, e, nil)
	expires := time.Now().Add(ttlMargin)
	for _, m := range []*equeue.Message{
		{Body: []byte("short"), ExpiresAt: expires}, {Body: []byte("last")}, {Body: []byte("high"), Priority: 1},
	} {
		m.Topic = "p"
		_, err := p.Send(ctx, m)
		require.NoError(t, err)
	}
	log := &bodyLog{}
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "p"}}, Concurrency: 1,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			log.add(m)
			if string(m.Body) == "high" {
				waitPast(expires)
			}
			return nil
		}})
	eventually(t, 10*time.Second, func() bool { return log.has("last") }, "the low lane handled")
	assert.Equal(t, []string{"high", "last"}, log.all(), "the expired low-priority message is not handed out")
	assert.Equal(t, uint64(1), e.Stats().ExpiredMessages, "counted as expired once")
}

// A PullConsumer does not return a higher lane's message that a gate check
// read ahead alive and that expired before the lane was fetched; nor does
// that message hold the lower lane back.
func TestPriority_PullConsumerReadAheadExpires(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	p := newProducer(t, e, nil)
	expires := time.Now().Add(ttlMargin)
	for _, m := range []*equeue.Message{{Body: []byte("low")}, {Body: []byte("short"), Priority: 1, ExpiresAt: expires}} {
		m.Topic = "p"
		_, err := p.Send(ctx, m)
		require.NoError(t, err)
	}
	pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { assert.NoError(t, pc.Close()) })
	low, high := equeue.QueueRef{Topic: "p", Queue: 0}, equeue.QueueRef{Topic: "p", Queue: 1}
	msgs, err := pc.Fetch(ctx, low, 10, 0) // reads the high lane ahead
	require.NoError(t, err)
	waitPast(expires)
	got, err := pc.Fetch(ctx, low, 10, 0)
	require.NoError(t, err)
	msgs = append(msgs, got...)
	require.Len(t, msgs, 1, "the low lane is not held back by an expired message")
	assert.Equal(t, "low", string(msgs[0].Body))
	got, err = pc.Fetch(ctx, high, 10, 0)
	require.NoError(t, err)
	assert.Empty(t, got, "the expired message is not returned")
	pos, ok := pc.Position(high)
	require.True(t, ok)
	assert.Equal(t, int64(1), pos, "the high lane's position passed it")
	assert.Equal(t, uint64(1), e.Stats().ExpiredMessages, "counted as expired once")
}
