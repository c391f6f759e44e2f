package equeue_test

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// topicBytes checks that a topic's byte account is known and matches its
// records, and returns it.
func topicBytes(t testing.TB, e *equeue.Engine, name string) int64 {
	t.Helper()
	account, recount, known := equeue.TopicBytes(e, name)
	require.True(t, known, "the byte account of %q is known", name)
	require.Equal(t, recount, account, "the byte account of %q matches its records", name)
	return account
}

// recordSize sends one message shaped like body to a fresh topic of e and
// returns the bytes it counts against MaxBytes.
func recordSize(t testing.TB, e *equeue.Engine, body string) int64 {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopicWith(ctx, "probe", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxBytes: 1 << 30}}))
	_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "probe", Body: []byte(body)})
	require.NoError(t, err)
	n := topicBytes(t, e, "probe")
	require.Positive(t, n)
	return n
}

func TestTopicLimits_MaxBytesRejectUnderConcurrentProducers(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		ctx := ctxT(t)
		e, b := openOver(t, transport, "memory", nil)
		a := b.(limitsAdmin)
		size := recordSize(t, e, "000-000") // every body below has this length
		const fits, producers, each = 60, 8, 30
		limit := fits*size + size/2 // room for 60 messages and a half
		require.NoError(t, a.CreateTopicWith(ctx, "capped", equeue.TopicOptions{Queues: 4,
			Limits: equeue.TopicLimits{MaxBytes: limit, Overflow: equeue.OverflowReject}}))
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
					_, err := prod.Send(ctx, &equeue.Message{Topic: "capped", Body: fmt.Appendf(nil, "%03d-%03d", p, i)})
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
		assert.Equal(t, int64(fits), ok.Load(), "exactly what fits was accepted")
		assert.Equal(t, int64(producers*each-fits), full.Load(), "every refused send got ErrTopicFull")
		assert.Equal(t, int64(fits), stored(t, a, "capped"))
		assert.Equal(t, fits*size, topicBytes(t, e, "capped"), "nothing stored beyond the limit")

		// A batch that would cross the limit is refused whole, even when
		// part of it would fit.
		require.NoError(t, a.SetTopicLimits(ctx, "capped", equeue.TopicLimits{MaxBytes: (fits + 1) * size, Overflow: equeue.OverflowReject}))
		prod := newProducer(t, b, nil)
		_, err := prod.SendBatch(ctx, []*equeue.Message{{Topic: "capped", Body: []byte("batch-1")}, {Topic: "capped", Body: []byte("batch-2")}})
		require.ErrorIs(t, err, equeue.ErrTopicFull)
		assert.Equal(t, fits*size, topicBytes(t, e, "capped"))
		_, err = prod.Send(ctx, &equeue.Message{Topic: "capped", Body: []byte("fits-ok")})
		require.NoError(t, err)
		assert.Equal(t, (fits+1)*size, topicBytes(t, e, "capped"))
	})
}

func TestTopicLimits_MaxBytesDropOldestUnderConcurrentProducers(t *testing.T) {
	forTransports(t, func(t *testing.T, transport string) {
		ctx := ctxT(t)
		e, b := openOver(t, transport, "memory", nil)
		a := b.(limitsAdmin)
		size := recordSize(t, e, "000-000")
		const fits, producers, each = 40, 4, 80
		limit := fits*size + size/2
		require.NoError(t, a.CreateTopicWith(ctx, "ring", equeue.TopicOptions{Queues: 3,
			Limits: equeue.TopicLimits{MaxBytes: limit}})) // drop-oldest is the zero value
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
					_, err := prod.Send(ctx, &equeue.Message{Topic: "ring", Body: fmt.Appendf(nil, "%03d-%03d", p, i)})
					assert.NoError(t, err, "drop-oldest never refuses a send that fits")
				}
			}()
		}
		wg.Wait()
		assert.Equal(t, fits*size, topicBytes(t, e, "ring"), "trimmed to what fits once the sends returned")
		assert.Equal(t, int64(fits), stored(t, a, "ring"))
		info, err := a.Topic(ctx, "ring")
		require.NoError(t, err)
		var total int64
		for _, q := range info.Queues {
			total += q.MaxOffset
			if q.MaxOffset > q.MinOffset {
				res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "ring", Queue: q.ID, Offset: 0, Max: 1000})
				require.NoError(t, err)
				assert.Equal(t, equeue.PullOffsetMoved, res.Status, "queue %d: the oldest were dropped", q.ID)
			}
		}
		assert.Equal(t, int64(producers*each), total, "every send was stored")

		// A send larger than the whole limit can never fit: refused under
		// either policy rather than emptying the topic.
		_, err = newProducer(t, b, nil).Send(ctx, &equeue.Message{Topic: "ring", Body: make([]byte, limit)})
		require.ErrorIs(t, err, equeue.ErrTopicFull)
		assert.Equal(t, fits*size, topicBytes(t, e, "ring"))
	})
}

func TestTopicLimits_MaxBytesExactAcrossRestarts(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	size := recordSize(t, e, "m0000")
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, e, nil)
	send := func(e *equeue.Engine, n int, from int) error {
		p := newProducer(t, e, nil)
		for i := from; i < from+n; i++ {
			if _, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m%04d", i)}); err != nil {
				return err
			}
		}
		return nil
	}
	require.NoError(t, send(e, 30, 0))
	require.NoError(t, p.Close())
	// Trimmed by count while it has no MaxBytes: its account is not kept.
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 25}))
	_, _, known := equeue.TopicBytes(e, "t")
	assert.False(t, known, "a topic without MaxBytes is not counted on trims")

	// Setting a MaxBytes later counts what is stored.
	l := equeue.TopicLimits{MaxBytes: 40 * size, Overflow: equeue.OverflowReject}
	require.NoError(t, e.SetTopicLimits(ctx, "t", l))
	assert.Equal(t, 25*size, topicBytes(t, e, "t"))

	e = reopen()
	assert.Equal(t, 25*size, topicBytes(t, e, "t"), "recounted on open")
	require.NoError(t, send(e, 15, 30))
	require.ErrorIs(t, send(e, 1, 45), equeue.ErrTopicFull)
	assert.Equal(t, 40*size, topicBytes(t, e, "t"))

	// Retention takes what it deletes off the account.
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxBytes: 40 * size, Overflow: equeue.OverflowReject, RetentionAge: time.Nanosecond}))
	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{})
	require.NoError(t, err)
	assert.Equal(t, int64(0), topicBytes(t, e, "t"), "retention deleted %d messages", info.Messages)
	require.NoError(t, e.SetTopicLimits(ctx, "t", l))
	require.NoError(t, send(e, 40, 46))
	e = reopen()
	assert.Equal(t, 40*size, topicBytes(t, e, "t"))
	require.ErrorIs(t, send(e, 1, 86), equeue.ErrTopicFull, "still full after a restart")
}

func TestTopicLimits_MaxBytesFailedWrite(t *testing.T) {
	ctx := ctxT(t)
	r := newFaultRig(t, "memory", nil)
	e, fs := r.E, r.FS
	size := recordSize(t, e, "x")
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1,
		Limits: equeue.TopicLimits{MaxBytes: 3 * size, Overflow: equeue.OverflowReject}}))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("1")})
	require.NoError(t, err)

	fs.FailWrites(1)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("2")})
	require.Error(t, err)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "a failed write is not stored")
	assert.Equal(t, size, topicBytes(t, e, "t"), "a failed write leaves the count unchanged")
	_, err = p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("2")}, {Topic: "t", Body: []byte("3")}})
	require.NoError(t, err, "the failed send took no room")
	assert.Equal(t, 3*size, topicBytes(t, e, "t"))

	// A failed fsync keeps the batch (outcome unknown): it is counted, as
	// its offsets are.
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxBytes: 5 * size, Overflow: equeue.OverflowReject}))
	fs.FailSyncs(1)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("4")})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	account, _, _ := equeue.TopicBytes(e, "t")
	assert.Equal(t, 4*size, account, "the kept batch is counted before it is visible")
	// The engine stores nothing more until it is reopened.
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("5")})
	require.ErrorIs(t, err, equeue.ErrStoreFailed)
	e = r.reopen()
	fs = r.FS
	p = newProducer(t, e, nil)
	assert.Equal(t, 4*size, topicBytes(t, e, "t"), "the kept batch is counted after the reopen")
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("5")})
	require.NoError(t, err)
	assert.Equal(t, 5*size, topicBytes(t, e, "t"))
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("6")})
	require.ErrorIs(t, err, equeue.ErrTopicFull)

	// A failed record delete after a drop-oldest trim: the watermark moved,
	// so the account follows it; the records go later.
	fs.FailDeletes(1)
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxBytes: 2 * size}))
	assert.Equal(t, 2*size, topicBytes(t, e, "t"))
}
