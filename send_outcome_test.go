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

// What Send returns for each outcome of the write, on the in-process fast
// path (no hooks: the result is set in place through the engine's calls)
// and with a hook (which sees the same result): stored, a duplicate in a
// dedup window, delayed, the write refused ("not stored": zero result,
// the store's error), the fsync failed ("unknown": zero result,
// ErrIndeterminate). After a reopen the store holds exactly the stored
// and the unknown messages.
func TestSend_ResultOfEachOutcome(t *testing.T) {
	for _, hooked := range []bool{false, true} {
		name := "no hooks"
		if hooked {
			name = "hooked"
		}
		t.Run(name, func(t *testing.T) {
			r := newFaultRig(t, "badger", &equeue.Options{Sync: equeue.SyncAlways})
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			var seen []equeue.SendResult
			var opts *equeue.ProducerOptions
			if hooked {
				opts = &equeue.ProducerOptions{Hooks: []equeue.Hooks{{AfterSend: func(_ context.Context, _ *equeue.Message, res equeue.SendResult, _ error) {
					seen = append(seen, res)
				}}}}
			}
			p := newProducer(t, r.E, opts)
			send := func(m *equeue.Message) (equeue.SendResult, error) {
				res, err := p.Send(ctxBG, m)
				if hooked {
					require.NotEmpty(t, seen)
					assert.Equal(t, res, seen[len(seen)-1], "the hook saw another result")
				}
				return res, err
			}

			first, err := send(&equeue.Message{Topic: "t", ID: "a", Body: []byte("a")})
			require.NoError(t, err)
			assert.Equal(t, equeue.SendResult{ID: "a", Topic: "t", Queue: 0, Offset: 0, StoredAt: first.StoredAt}, first)
			assert.False(t, first.StoredAt.IsZero())

			dup, err := send(&equeue.Message{Topic: "t", ID: "a", Body: []byte("a again")})
			require.NoError(t, err)
			assert.Equal(t, equeue.SendResult{ID: "a", Topic: "t", Queue: 0, Offset: 0, StoredAt: first.StoredAt, Duplicate: true}, dup)

			delayed, err := send(&equeue.Message{Topic: "t", ID: "d", Body: []byte("d"), Delay: time.Hour})
			require.NoError(t, err)
			assert.True(t, delayed.Delayed)
			assert.Equal(t, int64(-1), delayed.Offset)
			assert.Equal(t, "d", delayed.ID)

			r.FS.FailWrites(1)
			res, err := send(&equeue.Message{Topic: "t", ID: "w", Body: []byte("not stored")})
			require.ErrorIs(t, err, faultstore.ErrInjected)
			assert.False(t, errors.Is(err, equeue.ErrIndeterminate), "a refused write is not an unknown outcome: %v", err)
			assert.Zero(t, res)

			r.FS.FailSyncs(1)
			res, err = send(&equeue.Message{Topic: "t", ID: "s", Body: []byte("unknown")})
			require.ErrorIs(t, err, equeue.ErrIndeterminate)
			assert.Zero(t, res)

			assert.Equal(t, []string{"a", "unknown"}, queueBodies(t, r.reopen(), "t", 0))
		})
	}
}

// Writes completed by the writer itself (no fsync to wait for), where it
// then yields to their senders (letSendersBack), crossed with refused
// writes, a dedup window, blocking and asynchronous senders: every third
// store write fails. Each refused send reports "not stored" (the store's
// error, never "unknown"), its sender retries it with the same ID, and
// after a reopen every message is stored exactly once.
func TestSend_InlineCompletionsWithRefusedWrites(t *testing.T) {
	const senders, rounds, async = 8, 12, 40
	r := newFaultRig(t, "badger", &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	var writes atomic.Int64
	r.FS.OnWrite(func(*store.Batch) error {
		if writes.Add(1)%3 == 0 {
			return faultstore.ErrInjected
		}
		return nil
	})
	p := newProducer(t, r.E, nil)
	var refused atomic.Int64
	// Called from the senders' goroutines too: assert, not require.
	sendUntilStored := func(id string, first error) {
		for err := first; err != nil; {
			if !assert.ErrorIs(t, err, faultstore.ErrInjected) ||
				!assert.False(t, errors.Is(err, equeue.ErrIndeterminate), "a refused write reported as unknown: %v", err) {
				return
			}
			refused.Add(1)
			_, err = p.Send(ctxBG, &equeue.Message{Topic: "t", ID: id, Body: []byte(id)})
		}
	}
	var wg sync.WaitGroup
	var want []string
	for g := range senders {
		for i := range rounds {
			want = append(want, fmt.Sprintf("s%d-%d", g, i))
		}
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprintf("s%d-%d", g, i)
				_, err := p.Send(ctxBG, &equeue.Message{Topic: "t", ID: id, Body: []byte(id)})
				sendUntilStored(id, err)
			}
		})
	}
	futs := make([]*equeue.SendFuture, async)
	for i := range futs {
		id := fmt.Sprintf("a-%d", i)
		want = append(want, id)
		futs[i] = p.SendAsync(ctxBG, &equeue.Message{Topic: "t", ID: id, Body: []byte(id)})
	}
	for i, f := range futs {
		_, err := f.Result(ctxBG)
		sendUntilStored(fmt.Sprintf("a-%d", i), err)
	}
	wg.Wait()
	assert.Positive(t, refused.Load(), "no write was refused")
	r.FS.OnWrite(nil)
	assert.ElementsMatch(t, want, queueBodies(t, r.reopen(), "t", 0))
}
