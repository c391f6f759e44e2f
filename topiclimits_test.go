package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// limitsAdmin is what the limit tests need of an admin: the engine
// in-process, a remote.Client over the wire.
type limitsAdmin interface {
	CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error
	SetTopicLimits(ctx context.Context, name string, l equeue.TopicLimits) error
	Topic(ctx context.Context, name string) (equeue.TopicInfo, error)
}

// stored counts the messages a topic holds over its queues.
func stored(t testing.TB, a limitsAdmin, name string) int64 {
	t.Helper()
	ti, err := a.Topic(context.Background(), name)
	require.NoError(t, err)
	var n int64
	for _, q := range ti.Queues {
		n += q.MaxOffset - q.MinOffset
	}
	return n
}

func TestTopicLimits_RejectUnderConcurrentProducers(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		ctx := ctxT(t)
		_, b := openOver(t, transport, "memory", nil)
		a := b.(limitsAdmin)
		const limit, producers, each = 100, 8, 40
		require.NoError(t, a.CreateTopicWith(ctx, "capped", equeue.TopicOptions{Queues: 4,
			Limits: equeue.TopicLimits{MaxMessages: limit, Overflow: equeue.OverflowReject}}))
		var ok, full atomic.Int64
		var other sync.Map
		var wg sync.WaitGroup
		for p := 0; p < producers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				prod, err := equeue.NewProducer(b, nil)
				if !assert.NoError(t, err) {
					return
				}
				defer prod.Close()
				for i := 0; i < each; i++ {
					_, err := prod.Send(ctx, &equeue.Message{Topic: "capped", Body: []byte(fmt.Sprintf("%d-%d", p, i))})
					switch {
					case err == nil:
						ok.Add(1)
					case errors.Is(err, equeue.ErrTopicFull):
						full.Add(1)
					default:
						other.Store(err.Error(), true)
					}
				}
			}()
		}
		wg.Wait()
		other.Range(func(k, _ any) bool { t.Errorf("unexpected send error: %v", k); return true })
		assert.Equal(t, int64(limit), ok.Load(), "exactly the limit was accepted")
		assert.Equal(t, int64(producers*each-limit), full.Load(), "every refused send got ErrTopicFull")
		assert.Equal(t, int64(limit), stored(t, a, "capped"), "nothing stored beyond the limit")

		// A batch that would cross the limit is refused whole, even when
		// part of it would fit.
		require.NoError(t, a.SetTopicLimits(ctx, "capped", equeue.TopicLimits{MaxMessages: limit + 1, Overflow: equeue.OverflowReject}))
		prod := newProducer(t, b, nil)
		_, err := prod.SendBatch(ctx, []*equeue.Message{{Topic: "capped", Body: []byte("x")}, {Topic: "capped", Body: []byte("y")}})
		require.ErrorIs(t, err, equeue.ErrTopicFull)
		assert.Equal(t, int64(limit), stored(t, a, "capped"))
		_, err = prod.Send(ctx, &equeue.Message{Topic: "capped", Body: []byte("fits")})
		require.NoError(t, err)
		assert.Equal(t, int64(limit+1), stored(t, a, "capped"))
	})
}

func TestTopicLimits_DropOldestUnderConcurrentProducers(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		ctx := ctxT(t)
		e, b := openOver(t, transport, "memory", nil)
		a := b.(limitsAdmin)
		const limit, producers, each = 50, 4, 100
		require.NoError(t, a.CreateTopicWith(ctx, "ring", equeue.TopicOptions{Queues: 3,
			Limits: equeue.TopicLimits{MaxMessages: limit}})) // drop-oldest is the zero value
		// The documented bound: the limit plus the messages of the appends
		// in flight, here one single-message Send per producer.
		var peak atomic.Int64
		stop := make(chan struct{})
		sampled := make(chan struct{})
		go func() {
			defer close(sampled)
			for {
				select {
				case <-stop:
					return
				default:
				}
				info, err := e.Topic(ctx, "ring") // the engine's own view, over either transport
				if err != nil {
					return
				}
				if n := info.Messages; n > peak.Load() {
					peak.Store(n)
				}
			}
		}()
		var wg sync.WaitGroup
		for p := 0; p < producers; p++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				prod, err := equeue.NewProducer(b, nil)
				if !assert.NoError(t, err) {
					return
				}
				defer prod.Close()
				for i := 0; i < each; i++ {
					_, err := prod.Send(ctx, &equeue.Message{Topic: "ring", Body: []byte(fmt.Sprintf("%d-%d", p, i))})
					assert.NoError(t, err, "drop-oldest never refuses a send")
				}
			}()
		}
		wg.Wait()
		close(stop)
		<-sampled
		assert.LessOrEqual(t, peak.Load(), int64(limit+producers), "the topic never exceeds the limit by more than the sends in flight")
		t.Logf("peak %d, limit %d, %d producers", peak.Load(), limit, producers)
		assert.Equal(t, int64(limit), stored(t, a, "ring"), "back at the limit once the sends returned")
		info, err := a.Topic(ctx, "ring")
		require.NoError(t, err)
		var total int64
		for _, q := range info.Queues {
			total += q.MaxOffset
		}
		assert.Equal(t, int64(producers*each), total, "every send was stored")
		// What is left are the newest messages of each queue.
		for _, q := range info.Queues {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "ring", Queue: q.ID, Offset: 0, Max: 1000})
			require.NoError(t, err)
			if q.MaxOffset > q.MinOffset {
				assert.Equal(t, equeue.PullOffsetMoved, res.Status, "queue %d: the oldest were dropped", q.ID)
				assert.Equal(t, q.MinOffset, res.NextOffset)
			}
		}
	})
}

func TestTopicLimits_SetLaterTrimsAndPersists(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	for i := 0; i < 30; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{fmt.Sprint(i % 5)}, Body: []byte("x")})
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())
	l := equeue.TopicLimits{MaxMessages: 10, DefaultTTL: time.Hour, RetentionAge: -1}
	require.NoError(t, e.SetTopicLimits(ctx, "t", l))
	assert.Equal(t, int64(10), stored(t, e, "t"), "lowering the limit trims at once")
	e = reopen()
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, l, info.Limits, "limits are stored in the topic's metadata")
	assert.Equal(t, int64(10), stored(t, e, "t"))
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{}))
	e = reopen()
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.True(t, info.Limits.IsZero(), "cleared limits stay cleared")

	assert.ErrorIs(t, e.SetTopicLimits(ctx, "nope", l), equeue.ErrTopicNotFound)
	assert.ErrorIs(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: -1}), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{Overflow: 7}), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, e.CreateTopicWith(ctx, "u", equeue.TopicOptions{Limits: equeue.TopicLimits{DefaultTTL: -1}}), equeue.ErrInvalidArgument)
}

func TestTopicLimits_DefaultTTL(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "ttl", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{DefaultTTL: time.Hour}}))
	p := newProducer(t, e, nil)
	before := time.Now()
	_, err := p.Send(ctx, &equeue.Message{Topic: "ttl", Body: []byte("default")})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "ttl", Body: []byte("own"), TTL: 2 * time.Hour})
	require.NoError(t, err)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "ttl", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 2)
	assert.WithinRange(t, res.Messages[0].ExpiresAt, before.Add(time.Hour), time.Now().Add(time.Hour), "no TTL: the topic's default")
	assert.WithinRange(t, res.Messages[1].ExpiresAt, before.Add(2*time.Hour), time.Now().Add(2*time.Hour), "a message's own TTL wins")

	// A delayed message's default life starts at its delivery: a delay
	// longer than the default does not make it expire unseen.
	at := time.Now().Add(500 * time.Millisecond).Truncate(time.Millisecond)
	_, err = p.Send(ctx, &equeue.Message{Topic: "ttl", Body: []byte("delayed"), DeliverAt: at})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "ttl", Body: []byte("delayed by"), Delay: 500 * time.Millisecond})
	require.NoError(t, err)
	var late []*equeue.Message
	eventually(t, 10*time.Second, func() bool {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "ttl", Offset: 2, Max: 10})
		require.NoError(t, err)
		late = res.Messages
		return len(late) == 2
	}, "both delayed messages delivered")
	for _, m := range late {
		assert.True(t, m.ExpiresAt.Equal(m.DeliverAt.Add(time.Hour)), "%s: expires at %v, delivered at %v", m.Body, m.ExpiresAt, m.DeliverAt)
	}

	// A short default expires messages like their own TTL would.
	require.NoError(t, e.SetTopicLimits(ctx, "ttl", equeue.TopicLimits{DefaultTTL: time.Millisecond}))
	_, err = p.Send(ctx, &equeue.Message{Topic: "ttl", Body: []byte("short")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "ttl", Offset: 4, Max: 10})
		return err == nil && res.Expired == 1 && len(res.Messages) == 0
	}, "the message sent without a TTL expires after the topic's default")
}

func TestTopicLimits_RetentionOverride(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, e.CreateTopicWith(ctx, "forever", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{RetentionAge: -1}}))
	require.NoError(t, e.CreateTopicWith(ctx, "short", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{RetentionAge: time.Nanosecond}}))
	require.NoError(t, e.CreateTopic(ctx, "plain", 1))
	p := newProducer(t, e, nil)
	for _, topic := range []string{"forever", "short", "plain"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: topic, Body: []byte("x")})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool {
		_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{})
		return err == nil && stored(t, e, "short") == 0
	}, "a 1ns retention override deletes what the engine's 72h keeps")
	assert.Equal(t, int64(1), stored(t, e, "plain"), "the engine's policy keeps the plain topic's message")
	_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond})
	require.NoError(t, err)
	assert.Equal(t, int64(1), stored(t, e, "forever"), "a negative override keeps messages whatever the engine's age limit")
	assert.Equal(t, int64(0), stored(t, e, "plain"))
}

func TestTopicLimits_SetFailures(t *testing.T) {
	ctx := ctxT(t)
	r := newFaultRig(t, "memory", nil)
	e, fs := r.E, r.FS
	old := equeue.TopicLimits{MaxMessages: 1, Overflow: equeue.OverflowReject}
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: old}))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("1")})
	require.NoError(t, err)

	// A failed write: not stored, the old limits still hold.
	fs.FailWrites(1)
	err = e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 5, Overflow: equeue.OverflowReject})
	require.Error(t, err)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "a failed write is reported as not stored")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, old, info.Limits)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("2")})
	assert.ErrorIs(t, err, equeue.ErrTopicFull, "the old limit is still enforced")

	// A failed fsync: written, in force, but not known durable.
	fs.FailSyncs(1)
	err = e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 5, Overflow: equeue.OverflowReject})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(5), info.Limits.MaxMessages)
	// The engine stores nothing more until it is reopened.
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("2")})
	require.ErrorIs(t, err, equeue.ErrStoreFailed)
	e = r.reopen()
	fs = r.FS
	p = newProducer(t, e, nil)
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(5), info.Limits.MaxMessages, "kept across the reopen")
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("2")})
	assert.NoError(t, err, "the new limit is in force")

	// Lowering a drop-oldest limit whose record delete fails: the limits
	// and the new low watermark hold; the records are deleted later.
	var deletes atomic.Int64
	fs.OnDeleteRange(func(store.QueueID, uint64, uint64) error { deletes.Add(1); return nil })
	fs.FailDeletes(1)
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 1}))
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Messages)
	assert.Equal(t, int64(1), info.Queues[0].MinOffset)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("3")})
	require.NoError(t, err)
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Messages)
	assert.Equal(t, int64(2), info.Queues[0].MinOffset)
	assert.Equal(t, int64(2), deletes.Load(), "the next trim deletes what the failed delete left, then its own cut")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 2})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "3", string(res.Messages[0].Body), "the newest is kept")
}

func TestOverflowPolicy_Parse(t *testing.T) {
	for _, s := range []string{"drop-oldest", "reject"} {
		p, err := equeue.ParseOverflowPolicy(s)
		require.NoError(t, err)
		assert.Equal(t, s, p.String())
	}
	_, err := equeue.ParseOverflowPolicy("drop-newest")
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
}

// A process killed after SetTopicLimits stored a lower drop-oldest limit
// and before its trim (or after a send and before the trim that follows
// it) leaves the topic over its limit. Open trims it: before, it stayed
// over until the next send to it, however long that took (found by
// review).
func TestTopicLimits_OpenTrimsATopicLeftOverItsLimit(t *testing.T) {
	ctx := context.Background()
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctx, "capped", 1))
	for i := range 20 {
		_, err := r.E.Append(ctx, &equeue.AppendRequest{Topic: "capped", Messages: []*equeue.Message{{Body: []byte(fmt.Sprint(i))}}})
		require.NoError(t, err)
	}
	// The limit's write is the last that reaches the store: the process
	// dies before the trim.
	var dead atomic.Bool
	r.FS.OnWrite(func(*store.Batch) error {
		if dead.Swap(true) {
			return faultstore.ErrInjected
		}
		return nil
	})
	require.NoError(t, r.E.SetTopicLimits(ctx, "capped", equeue.TopicLimits{MaxMessages: 5}))
	_ = r.E.Close() // its writes fail, as the killed process made none
	r.open()

	info, err := r.E.Topic(ctx, "capped")
	require.NoError(t, err)
	assert.Equal(t, int64(5), info.Messages, "the topic is at its limit once open")
	require.Len(t, info.Queues, 1)
	res, err := r.E.Pull(ctx, &equeue.PullRequest{Topic: "capped", Offset: info.Queues[0].MinOffset, Max: 32})
	require.NoError(t, err)
	var got []string
	for _, m := range res.Messages {
		got = append(got, string(m.Body))
	}
	assert.Equal(t, []string{"15", "16", "17", "18", "19"}, got, "the oldest are dropped")
}
