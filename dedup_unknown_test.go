package equeue_test

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestDedup_ResendAfterAnUnknownOutcomeAnswersAsTheOriginal: a send told
// "unknown" and sent again with its ID is answered as its original turned
// out: a duplicate at the original's offset when the original was stored
// (its fsync failed; its sender gave up while it was written, the resend
// queued behind it), stored once when it was not (its sender gave up and
// its write failed), and "unknown" again while the engine cannot tell (a
// failed fsync not yet followed by a reopen), never "not stored". Also
// after a reopen.
func TestDedup_ResendAfterAnUnknownOutcomeAnswersAsTheOriginal(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			send := func(ctx context.Context, id string) (equeue.AppendResult, error) {
				return r.E.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: id, Body: []byte(id)}}})
			}
			_, err := send(ctxBG, "a")
			require.NoError(t, err)

			// A failed fsync: unknown, and unknown again until a reopen.
			r.FS.FailSyncs(1)
			_, err = send(ctxBG, "x")
			require.ErrorIs(t, err, equeue.ErrIndeterminate)
			res, err := send(ctxBG, "x")
			require.ErrorIs(t, err, equeue.ErrIndeterminate, "before a reopen the resend cannot be told apart (answered %+v)", res)
			r.reopen()
			res, err = send(ctxBG, "x")
			require.NoError(t, err)
			assert.True(t, res.Duplicate)
			assert.Equal(t, int64(1), res.FirstOffset, "the original's offset")

			// Given up while written, the write then failing; the resend,
			// queued behind it, is stored.
			resend := func(id string) <-chan answerOf {
				ch := make(chan answerOf, 1)
				go func() {
					res, err := send(ctxBG, id)
					ch <- answerOf{res, err}
				}()
				return ch
			}
			gaveUp := func(id string, fail bool) <-chan answerOf {
				t.Helper()
				inWrite, release := holdWriteFailing(t, r, id, fail)
				ctx, cancel := context.WithCancel(ctxBG)
				sent := make(chan error, 1)
				go func() {
					_, err := send(ctx, id)
					sent <- err
				}()
				<-inWrite
				cancel()
				err := <-sent
				require.ErrorIs(t, err, equeue.ErrIndeterminate)
				again := resend(id)
				eventually(t, waitLong, func() bool { return equeue.QueuedCommands(r.E) > 0 }, "the resend queued behind the held write")
				release()
				return again
			}
			g := <-gaveUp("g", true)
			require.NoError(t, g.err)
			assert.False(t, g.res.Duplicate, "the original's write failed: not stored")
			assert.Equal(t, int64(2), g.res.FirstOffset)

			// Given up while written, the write then succeeding: the
			// resend is its duplicate.
			h := <-gaveUp("h", false)
			require.NoError(t, h.err)
			assert.True(t, h.res.Duplicate, "the original's write succeeded: stored")
			assert.Equal(t, int64(3), h.res.FirstOffset)

			want := []string{"a", "x", "g", "h"}
			assert.Equal(t, want, queueBodies(t, r.E, "t", 0))
			r.reopen()
			for i, id := range want {
				res, err := send(ctxBG, id)
				require.NoError(t, err)
				assert.True(t, res.Duplicate, id)
				assert.Equal(t, int64(i), res.FirstOffset, id)
			}
			assert.Equal(t, want, queueBodies(t, r.E, "t", 0))
		})
	}
}

// answerOf is the outcome of an append.
type answerOf struct {
	res equeue.AppendResult
	err error
}

// holdWriteFailing holds the first write of r's store that carries body
// until release runs (also at the end of the test), then fails it with
// faultstore.ErrInjected when fail is set, or lets it through; inWrite is
// closed once the write is held.
func holdWriteFailing(t *testing.T, r *faultRig, body string, fail bool) (inWrite <-chan struct{}, release func()) {
	t.Helper()
	in, held := make(chan struct{}), make(chan struct{})
	release = sync.OnceFunc(func() { close(held) })
	t.Cleanup(release)
	var once sync.Once
	r.FS.OnWrite(func(b *store.Batch) error {
		if !slices.ContainsFunc(b.Entries, func(e store.Entry) bool { return bytes.Contains(e.Value, []byte(body)) }) {
			return nil
		}
		var err error
		once.Do(func() {
			close(in)
			<-held
			if fail {
				err = faultstore.ErrInjected
			}
		})
		return err
	})
	return in, release
}
