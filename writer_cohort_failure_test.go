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

// Cohort waits change which batches share a Sync, never what a failed Sync
// reports. Senders merged into cohorts around two injected fsync failures
// send to a dedup topic — retrying an unknown outcome with the same ID
// until acknowledged — and delayed messages. Every dedup ID is kept once,
// at the offset its acknowledgement named (the retry after an unknown
// outcome is answered with the copy kept); every acknowledged delayed
// message is delivered once, an unknown one at most once, nothing else.
func TestWriter_CohortsUnderFailedSyncsKeepDedupAndDelays(t *testing.T) {
	const senders, rounds = 16, 6
	r := newFaultRig(t, "memory", &equeue.Options{Sync: equeue.SyncAlways})
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	r.FS.Delay(0, 30*time.Millisecond)
	equeue.SetGroupCommitLinger(r.E, 20*time.Millisecond)
	var syncs atomic.Int64
	r.FS.OnSync(func() error {
		if n := syncs.Add(1); n == 5 || n == 11 { // once the cohorts have merged
			return errors.New("injected fsync failure")
		}
		return nil
	})
	p, err := equeue.NewProducer(r.E, nil)
	require.NoError(t, err)
	defer p.Close()

	var (
		wg                sync.WaitGroup
		mu                sync.Mutex
		ackedAt           = map[string]int64{} // dedup ID -> offset acknowledged
		retried           atomic.Int64         // dedup sends answered unknown, then retried
		delayedAcked      = map[string]bool{}
		delayedUnknown    = map[string]bool{}
		unexpectedFailure atomic.Bool
	)
	for g := range senders {
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprintf("%d-%d", g, i)
				for {
					res, err := p.Send(ctxBG, &equeue.Message{Topic: "d", ID: id, Body: []byte(id)})
					if err == nil {
						mu.Lock()
						ackedAt[id] = res.Offset
						mu.Unlock()
						break
					}
					if !errors.Is(err, equeue.ErrIndeterminate) {
						t.Errorf("dedup send %s: %v", id, err)
						unexpectedFailure.Store(true)
						return
					}
					retried.Add(1)
				}
				_, err := p.Send(ctxBG, &equeue.Message{Topic: "t", Body: []byte(id), Delay: 50 * time.Millisecond})
				mu.Lock()
				switch {
				case err == nil:
					delayedAcked[id] = true
				case errors.Is(err, equeue.ErrIndeterminate):
					delayedUnknown[id] = true
				default:
					t.Errorf("delayed send %s: %v", id, err)
					unexpectedFailure.Store(true)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.False(t, unexpectedFailure.Load())
	t.Logf("dedup retries %d, delayed unknown %d, syncs %d", retried.Load(), len(delayedUnknown), syncs.Load())
	require.GreaterOrEqual(t, syncs.Load(), int64(11), "both failures were injected")
	assert.Positive(t, retried.Load()+int64(len(delayedUnknown)), "a failed fsync was reported")

	bodies := queueBodies(t, r.E, "d", 0)
	require.Len(t, bodies, senders*rounds, "every dedup ID kept once")
	for off, b := range bodies {
		at, ok := ackedAt[b]
		if assert.True(t, ok, "%s kept but never acknowledged", b) {
			assert.Equal(t, int64(off), at, "%s acknowledged at another offset than kept", b)
		}
	}

	require.Eventually(t, func() bool {
		got := map[string]bool{}
		for _, b := range queueBodies(t, r.E, "t", 0) {
			got[b] = true
		}
		for id := range delayedAcked {
			if !got[id] {
				return false
			}
		}
		return true
	}, waitLong, 10*time.Millisecond, "every acknowledged delayed message delivered")
	time.Sleep(100 * time.Millisecond) // unknown ones come due as well
	seen := map[string]bool{}
	for _, b := range queueBodies(t, r.E, "t", 0) {
		assert.False(t, seen[b], "delayed %s delivered twice", b)
		seen[b] = true
		assert.True(t, delayedAcked[b] || delayedUnknown[b], "delivered %s, never sent", b)
	}
}
