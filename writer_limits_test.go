package equeue_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// plug holds the writer inside a store Write until the returned release
// is called, so that the sends started meanwhile queue up together.
func plug(t *testing.T, r *faultRig) (release func()) {
	t.Helper()
	held := make(chan struct{})
	gate := make(chan struct{})
	var once sync.Once
	r.FS.OnWrite(func(*store.Batch) error {
		once.Do(func() { close(held); <-gate })
		return nil
	})
	plugged := make(chan error, 1)
	go func() {
		_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("plug")}}})
		plugged <- err
	}()
	<-held
	return func() {
		close(gate)
		require.NoError(t, <-plugged)
	}
}

// innocents sends n one-message appends to topic t concurrently and
// returns their errors once all returned.
func innocents(e *equeue.Engine, n int) func() []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Queue: i % 4, Messages: []*equeue.Message{{Body: []byte("innocent")}}})
		}()
	}
	return func() []error { wg.Wait(); return errs }
}

func bulk(n int, f func(i int, m *equeue.Message)) []*equeue.Message {
	ms := make([]*equeue.Message, n)
	for i := range ms {
		ms[i] = &equeue.Message{Body: []byte("b")}
		f(i, ms[i])
	}
	return ms
}

// Issue 11, scenario 2: a send that can never fit in one store write (4,000
// messages with delay index keys are 8,000 store operations, above the
// store's limit; 3,000 with IDs of 4,000 bytes on a dedup topic are 12 MB
// of dedup entries) is refused with ErrBatchTooLarge before it is queued,
// and the sends queued beside it succeed; sends of 3,000 delayed messages
// (6,000 operations) or of 3,000 short IDs are stored. Both stores have the
// same limits.
func TestWriter_OversizedSendIsRefusedAlone(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 4))
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			dedupMsgs := func(n int, tag string) []*equeue.Message {
				return bulk(n, func(i int, m *equeue.Message) { m.ID = fmt.Sprintf("%s-%d", tag, i) })
			}
			longIDs := func(n int) []*equeue.Message {
				return bulk(n, func(i int, m *equeue.Message) { m.ID = fmt.Sprintf("%04000d", i) })
			}
			delayedMsgs := func(n int) []*equeue.Message {
				return bulk(n, func(_ int, m *equeue.Message) { m.Delay = 10 * time.Millisecond })
			}
			for name, big := range map[string]*equeue.AppendRequest{
				"dedup":   {Topic: "d", Messages: longIDs(3000)},
				"delayed": {Topic: "t", Messages: delayedMsgs(4000)},
			} {
				t.Run(name, func(t *testing.T) {
					release := plug(t, r)
					wait := innocents(r.E, 20)
					bigErr := make(chan error, 1)
					go func() {
						_, err := r.E.Append(ctxBG, big)
						bigErr <- err
					}()
					// Refused without the writer's help; the bound only keeps a
					// writer that queued it (the old behaviour) from deadlocking here.
					var err error
					select {
					case err = <-bigErr:
						release()
					case <-time.After(time.Second):
						release()
						err = <-bigErr
					}
					require.ErrorIs(t, err, equeue.ErrBatchTooLarge)
					for i, err := range wait() {
						assert.NoError(t, err, "innocent send %d", i)
					}
					r.FS.OnWrite(nil)
				})
			}
			// The same long IDs fit without a window: the dedup entries
			// are what cannot.
			_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: longIDs(3000)})
			require.NoError(t, err)
			res, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "d", Messages: dedupMsgs(3000, "ok")})
			require.NoError(t, err)
			assert.Equal(t, int64(0), res.FirstOffset)
			_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: delayedMsgs(3000)})
			require.NoError(t, err)
			eventually(t, waitLong, func() bool { return len(queueBodies(t, r.E, "t", 1)) >= 3010 }, "3,000 delayed messages moved")
			assert.Len(t, queueBodies(t, r.E, "t", 1), 3010) // with five innocents of each subtest
		})
	}
}

// Issue 11, scenario 2: 7,000 dedup IDs expiring together leave the
// store (their groups) and the index; the unrelated
// send that wakes the writer is stored.
func TestWriter_DedupExpiryIsBoundedPerBatch(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
			const window = 4 * time.Second
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "d", equeue.TopicOptions{Queues: 1, DedupWindow: window}))
			first := time.Now()
			for b := 0; b < 7; b++ {
				ms := bulk(1000, func(i int, m *equeue.Message) { m.ID = fmt.Sprintf("%d-%d", b, i) })
				_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "d", Messages: ms})
				require.NoError(t, err)
			}
			last := time.Now()
			// On a machine so loaded that writing took longer than the
			// window, the first entries may already be expiring.
			if time.Since(first) < window {
				// IDs of 3 to 6 bytes: about 100 to a group.
				require.Greater(t, metaKeys(t, r.FS, "ug/"), 7)
				require.Less(t, metaKeys(t, r.FS, "ug/"), 7000/50, "not a key per ID")
			} else {
				t.Logf("writing took %v, longer than the window: the count before expiry is not checked", time.Since(first))
			}
			eventually(t, waitLong, func() bool { return time.Since(last) > window+50*time.Millisecond }, "the window passes")
			_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("unrelated")}}})
			require.NoError(t, err)
			eventually(t, waitLong, func() bool { return metaKeys(t, r.FS, "ug/") == 0 }, "expired dedup groups deleted")
			// Memory follows the store write that deleted the last groups.
			eventually(t, waitLong, func() bool { return r.E.Stats().DedupIDs == 0 }, "expired IDs forgotten")
			// The IDs are free again.
			res, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "0-0", Body: []byte("again")}}})
			require.NoError(t, err)
			assert.False(t, res.Duplicate)
		})
	}
}

// Issue 11, scenario 2: 512 due delayed messages moved while a 6,000-record
// batch and 60 single sends are queued: the scheduler's moves are bounded
// per batch and never make a user send fail.
func TestWriter_SchedulerMovesDoNotFailUserSends(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 4))
			require.NoError(t, r.E.CreateTopic(ctxBG, "d", 1))
			due := time.Now().Add(300 * time.Millisecond)
			_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "d", Messages: bulk(512, func(_ int, m *equeue.Message) { m.DeliverAt = due })})
			require.NoError(t, err)
			release := plug(t, r)
			wait := innocents(r.E, 60)
			bigErr := make(chan error, 1)
			go func() {
				_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: bulk(6000, func(int, *equeue.Message) {})})
				bigErr <- err
			}()
			// Let the moves come due and queue behind the held write (best effort:
			// the assertions hold however the commands interleave).
			eventually(t, waitLong, func() bool { return time.Since(due) > 200*time.Millisecond }, "the delayed messages are due")
			release()
			require.NoError(t, <-bigErr)
			for i, err := range wait() {
				assert.NoError(t, err, "user send %d", i)
			}
			eventually(t, waitLong, func() bool { return len(queueBodies(t, r.E, "d", 0)) == 512 }, "512 moved")
		})
	}
}
