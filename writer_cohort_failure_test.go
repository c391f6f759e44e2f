package equeue_test

import (
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
// reports. Senders merged into cohorts around an injected fsync failure
// send to a dedup topic and delayed messages until the engine stops
// storing; after a reopen they send every dedup ID not acknowledged again,
// with the same ID, until it is. Every dedup ID is kept once, at the offset
// its acknowledgement named (one kept with an unknown outcome is answered
// as a duplicate); every acknowledged delayed message is delivered once, an
// unknown one at most once, a refused one never.
func TestWriter_CohortsUnderAFailedSyncKeepDedupAndDelays(t *testing.T) {
	// A linger as set, and one stretched to the Sync's time (lingerFor),
	// whose expiries also lower the writer's target.
	for _, c := range []struct{ linger, lingerCap time.Duration }{{20 * time.Millisecond, 0}, {10 * time.Millisecond, 100 * time.Millisecond}} {
		t.Run(fmt.Sprintf("linger=%v/cap=%v", c.linger, c.lingerCap), func(t *testing.T) { cohortsUnderAFailedSync(t, c.linger, c.lingerCap) })
	}
}

func cohortsUnderAFailedSync(t *testing.T, linger, lingerCap time.Duration) {
	const senders, rounds = 16, 6
	r := newFaultRig(t, "memory", &equeue.Options{Sync: equeue.SyncAlways})
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	r.FS.Delay(0, 30*time.Millisecond)
	equeue.SetGroupCommitLinger(r.E, linger)
	if lingerCap > 0 {
		equeue.SetGroupCommitLingerCap(r.E, lingerCap)
	}
	syncs := failNthSync(r, 5) // once the cohorts have merged

	var (
		mu        sync.Mutex
		ackedAt   = map[string]int64{}  // dedup ID -> offset acknowledged
		unacked   []string              // dedup IDs answered unknown or refused
		delayed   = map[string]string{} // delayed body -> "acked", "unknown" or "refused"
		unknownDD atomic.Int64
	)
	p, err := equeue.NewProducer(r.E, nil)
	require.NoError(t, err)
	var wg sync.WaitGroup
	for g := range senders {
		wg.Go(func() {
			for i := range rounds {
				id := fmt.Sprintf("%d-%d", g, i)
				res, err := p.Send(ctxBG, &equeue.Message{Topic: "d", ID: id, Body: []byte(id)})
				o := outcomeOf(t, err)
				mu.Lock()
				if o == "acked" {
					ackedAt[id] = res.Offset
				} else {
					unacked = append(unacked, id)
				}
				if o == "unknown" {
					unknownDD.Add(1)
				}
				mu.Unlock()
				_, err = p.Send(ctxBG, &equeue.Message{Topic: "t", Body: []byte(id), Delay: 50 * time.Millisecond})
				mu.Lock()
				delayed[id] = outcomeOf(t, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.NoError(t, p.Close())
	require.Error(t, r.E.StoreFailure(), "the fsync failure stopped the engine")
	unknownDelayed := 0
	for _, o := range delayed {
		if o == "unknown" {
			unknownDelayed++
		}
	}
	t.Logf("%d syncs; unknown: %d dedup, %d delayed; not acknowledged: %d dedup", syncs.Load(), unknownDD.Load(), unknownDelayed, len(unacked))
	require.Positive(t, unknownDD.Load()+int64(unknownDelayed), "the failed fsync was reported as unknown")

	e := r.reopen()
	require.NoError(t, e.StoreFailure())
	for _, id := range unacked {
		res, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: id, Body: []byte(id)}}})
		require.NoError(t, err, "retry of %s", id)
		ackedAt[id] = res.FirstOffset
	}

	bodies := queueBodies(t, e, "d", 0)
	require.Len(t, bodies, senders*rounds, "every dedup ID kept once")
	for off, b := range bodies {
		at, ok := ackedAt[b]
		if assert.True(t, ok, "%s kept but never acknowledged", b) {
			assert.Equal(t, int64(off), at, "%s acknowledged at another offset than kept", b)
		}
	}

	require.Eventually(t, func() bool {
		got := map[string]bool{}
		for _, b := range queueBodies(t, e, "t", 0) {
			got[b] = true
		}
		for id, o := range delayed {
			if o == "acked" && !got[id] {
				return false
			}
		}
		return true
	}, waitLong, 10*time.Millisecond, "every acknowledged delayed message delivered")
	time.Sleep(100 * time.Millisecond) // unknown ones come due as well
	seen := map[string]bool{}
	for _, b := range queueBodies(t, e, "t", 0) {
		assert.False(t, seen[b], "delayed %s delivered twice", b)
		seen[b] = true
		assert.Contains(t, []string{"acked", "unknown"}, delayed[b], "delivered %s (%s)", b, delayed[b])
	}
}

// While senders race an fsync that fails, a reader polling the queue only
// ever sees messages whose send was acknowledged: a batch of unknown
// outcome (covered by the failed fsync, or written while it ran) is never
// shown by the engine that reported it unknown. After a reopen the store
// holds every acknowledged message once, no refused one.
func TestWriter_ReadersNeverSeeUnknownOutcomes(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			const senders, rounds = 8, 40
			r := newFaultRig(t, kind, &equeue.Options{Sync: equeue.SyncAlways})
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
			r.FS.Delay(0, 2*time.Millisecond)
			failNthSync(r, 15)
			var (
				mu       sync.Mutex
				seen     = map[string]bool{}
				stop     = make(chan struct{})
				readerWG sync.WaitGroup
			)
			readerWG.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					res, err := r.E.Pull(ctxBG, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0, Max: 1024})
					if err != nil {
						continue
					}
					mu.Lock()
					for _, m := range res.Messages {
						seen[string(m.Body)] = true
					}
					mu.Unlock()
				}
			})
			outcomes := sendOutcomes(t, r.E, senders, rounds)
			close(stop)
			readerWG.Wait()
			require.Error(t, r.E.StoreFailure())
			for b := range seen {
				assert.Equal(t, "acked", outcomes[b], "a reader saw %s", b)
			}
			e := r.reopen()
			kept := map[string]bool{}
			for _, b := range queueBodies(t, e, "t", 0) {
				assert.False(t, kept[b], "%s stored twice", b)
				kept[b] = true
			}
			for b, o := range outcomes {
				switch o {
				case "acked", "unknown":
					assert.True(t, kept[b], "%s (%s) kept", b, o)
				case "refused":
					assert.False(t, kept[b], "%s refused but stored", b)
				}
			}
		})
	}
}
