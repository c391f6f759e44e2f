package equeue_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// makeDeadLetters sends msgs to topic t and waits until group g holds them
// as dead letters; the consumer that put them there is closed on return.
func makeDeadLetters(t *testing.T, e *equeue.Engine, ms ...*equeue.Message) []equeue.DLQEntry {
	t.Helper()
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("no")) }})
	p := newProducer(t, e, nil)
	for _, m := range ms {
		_, err := p.Send(ctxBG, m)
		require.NoError(t, err)
	}
	var dls []equeue.DLQEntry
	eventually(t, waitLong, func() bool {
		var err error
		dls, err = e.DeadLetters(ctxBG, "g", 0, 100)
		require.NoError(t, err)
		return len(dls) == len(ms)
	}, "%d dead letters", len(ms))
	require.NoError(t, c.Close())
	return dls
}

func redriven(t *testing.T, e *equeue.Engine) []bool {
	t.Helper()
	dls, err := e.DeadLetters(ctxBG, "g", 0, 100)
	require.NoError(t, err)
	out := make([]bool, len(dls))
	for i, dl := range dls {
		out[i] = dl.Redriven
	}
	return out
}

// Issue 11, point 3: a delayed send on a dedup topic is checked against the
// topic's window when it is sent: a delayed duplicate is answered as a
// duplicate and one copy is delivered.
func TestWriter_DelayedSendIsDeduplicatedAtSendTime(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			send := func(delay time.Duration) equeue.AppendResult {
				res, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "x", Body: []byte("x"), Delay: delay}}})
				require.NoError(t, err)
				return res
			}
			first := send(20 * time.Millisecond)
			assert.True(t, first.Delayed)
			assert.False(t, first.Duplicate)
			again := send(20 * time.Millisecond)
			assert.True(t, again.Duplicate, "a delayed duplicate is acknowledged as a duplicate")
			assert.True(t, again.Delayed)
			assert.Equal(t, int64(-1), again.FirstOffset)
			assert.True(t, send(0).Duplicate, "an immediate send of a delayed ID is a duplicate too")
			eventually(t, waitLong, func() bool {
				return metaKeys(t, r.FS, "d/") == 0 && len(queueBodies(t, r.E, "t", 0)) > 0
			}, "delayed message moved")
			assert.Equal(t, []string{"x"}, queueBodies(t, r.E, "t", 0))
		})
	}
}

// Issue 11, point 4: Redrive on a dedup topic stores the copy (it bypasses
// the window on purpose) and marks the dead letter, instead of reporting it
// sent while the window swallows it.
func TestWriter_RedriveOnDedupTopicIsNotSwallowed(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			makeDeadLetters(t, r.E, &equeue.Message{Topic: "t", ID: "x", Body: []byte("x")})
			n, err := r.E.Redrive(ctxBG, "g", equeue.RedriveRequest{All: true, ToTopic: true})
			require.NoError(t, err)
			assert.Equal(t, 1, n)
			assert.Equal(t, []string{"x", "x"}, queueBodies(t, r.E, "t", 0))
			assert.Equal(t, []bool{true}, redriven(t, r.E))
			n, err = r.E.Redrive(ctxBG, "g", equeue.RedriveRequest{All: true, ToTopic: true})
			require.NoError(t, err)
			assert.Equal(t, 0, n, "never redriven twice")
			// A producer retry of the ID now finds the redriven copy.
			res, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "x", Body: []byte("x")}}})
			require.NoError(t, err)
			assert.True(t, res.Duplicate)
			assert.Equal(t, int64(1), res.FirstOffset)
		})
	}
}

// A redrive whose Write fails sends and marks nothing; one whose Sync fails
// is kept (sent and marked, reported indeterminate), stops the engine's
// writes until a reopen, and is never sent twice, also after a reopen.
func TestWriter_RedriveFailures(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
			dls := makeDeadLetters(t, r.E, &equeue.Message{Topic: "t", Body: []byte("a")}, &equeue.Message{Topic: "t", Body: []byte("b")})
			retry := equeue.RetryTopic("g") // where the group's dead letters are redriven

			r.FS.FailWrites(1)
			n, err := r.E.Redrive(ctxBG, "g", equeue.RedriveRequest{All: true})
			require.ErrorIs(t, err, faultstore.ErrInjected)
			assert.NotErrorIs(t, err, equeue.ErrIndeterminate)
			assert.Equal(t, 0, n)
			assert.Equal(t, []bool{false, false}, redriven(t, r.E))
			assert.Empty(t, queueBodies(t, r.E, retry, 0))

			r.FS.FailSyncs(1)
			n, err = r.E.Redrive(ctxBG, "g", equeue.RedriveRequest{Offsets: []int64{0}})
			require.ErrorIs(t, err, equeue.ErrIndeterminate)
			assert.Equal(t, 0, n)
			assert.Equal(t, []bool{true, false}, redriven(t, r.E), "the kept redrive is marked")
			_, err = r.E.Redrive(ctxBG, "g", equeue.RedriveRequest{All: true})
			require.ErrorIs(t, err, equeue.ErrStoreFailed, "nothing is stored until a reopen")

			e := r.reopen()
			assert.Equal(t, []bool{true, false}, redriven(t, e), "the kept redrive is marked")
			n, err = e.Redrive(ctxBG, "g", equeue.RedriveRequest{All: true})
			require.NoError(t, err)
			assert.Equal(t, 1, n, "only the unmarked dead letter is sent")
			// Dead letters are redriven in their order in the dead-letter topic.
			want := []string{string(dls[0].Message.Body), string(dls[1].Message.Body)}
			assert.Equal(t, want, queueBodies(t, e, retry, 0))
			e = r.reopen()
			assert.Equal(t, want, queueBodies(t, e, retry, 0))
			assert.Equal(t, []bool{true, true}, redriven(t, e))
		})
	}
}

// A send given up while the engine writes it is told "unknown"; sent again
// with the same ID on a dedup topic it is found there, stored once. A
// redrive given up the same way is told "unknown" too, is marked, and is
// never sent twice.
func TestWriter_GivenUpSendAndRedriveWithDedup(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			makeDeadLetters(t, r.E, &equeue.Message{Topic: "t", ID: "y", Body: []byte("dead")})
			p := newProducer(t, r.E, nil)

			inWrite, release := holdWriteOf(t, r, "given up")
			ctx, cancel := context.WithCancel(ctxBG)
			sent := make(chan error, 1)
			go func() {
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", ID: "x", Body: []byte("given up")})
				sent <- err
			}()
			<-inWrite
			cancel()
			err := <-sent
			require.ErrorIs(t, err, equeue.ErrIndeterminate)
			require.ErrorIs(t, err, context.Canceled)
			release()
			res, err := p.Send(ctxBG, &equeue.Message{Topic: "t", ID: "x", Body: []byte("given up")})
			require.NoError(t, err)
			assert.True(t, res.Duplicate, "the given-up send was stored: the retry finds it")
			assert.Equal(t, []string{"dead", "given up"}, queueBodies(t, r.E, "t", 0))

			inWrite, release = holdWriteOf(t, r, "dead")
			ctx, cancel = context.WithCancel(ctxBG)
			redrove := make(chan error, 1)
			go func() {
				_, err := r.E.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
				redrove <- err
			}()
			<-inWrite
			cancel()
			err = <-redrove
			require.ErrorIs(t, err, equeue.ErrIndeterminate)
			require.ErrorIs(t, err, context.Canceled)
			release()
			want := []string{"dead", "given up", "dead"}
			eventually(t, 10*time.Second, func() bool {
				return slices.Equal(redriven(t, r.E), []bool{true}) && slices.Equal(queueBodies(t, r.E, "t", 0), want)
			}, "the given-up redrive is stored and marked")
			n, err := r.E.Redrive(ctxBG, "g", equeue.RedriveRequest{All: true, ToTopic: true})
			require.NoError(t, err)
			assert.Equal(t, 0, n, "never redriven twice")
			assert.Equal(t, want, queueBodies(t, r.E, "t", 0))
		})
	}
}

// A send under SyncAlways answered from the dedup window must be as
// durable as a stored one: when the original was written under SyncNever
// (not synced), the duplicate's answer waits for an fsync, and an fsync
// that fails makes it unknown, not "stored".
func TestWriter_SyncedDuplicateOfAnUnsyncedSendIsSynced(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, &equeue.Options{Sync: equeue.SyncAlways})
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			never, always := equeue.SyncNever, equeue.SyncAlways
			send := func(sync *equeue.SyncPolicy) (equeue.AppendResult, error) {
				return r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Sync: sync,
					Messages: []*equeue.Message{{ID: "x", Body: []byte("x")}}})
			}
			_, err := send(&never)
			require.NoError(t, err)

			r.FS.FailSyncs(1)
			res, err := send(&always)
			require.ErrorIs(t, err, equeue.ErrIndeterminate,
				"the duplicate was acknowledged under SyncAlways without an fsync of its original (result %+v)", res)
		})
	}
}

// A duplicate of a message stored by an earlier write is answered as a
// duplicate even when the write of its batch is refused: nothing of the
// batch is stored, but the message it names is, so answering it with the
// refusal ("not stored") would have its sender give up on a message that
// is there. The new send beside it gets the refusal.
func TestWriter_DuplicateInARefusedBatchIsStillADuplicate(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
			orig, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "x", Body: []byte("x")}}})
			require.NoError(t, err)

			type answer struct {
				res equeue.AppendResult
				err error
			}
			appendAsync := func(id, body string) <-chan answer {
				ch := make(chan answer, 1)
				r.E.AppendAsync(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: id, Body: []byte(body)}}},
					func(res equeue.AppendResult, err error) { ch <- answer{res, err} })
				return ch
			}
			// Hold the writer in a write, so that the duplicate and a new
			// send (both queued when AppendAsync returns) make one batch.
			inWrite, release := holdWriteOf(t, r, "hold")
			held := appendAsync("h", "hold")
			<-inWrite
			dup := appendAsync("x", "x again")
			fresh := appendAsync("y", "y")
			r.FS.FailWrites(1) // the next write: the batch of both
			release()
			require.NoError(t, (<-held).err)

			y := <-fresh
			require.ErrorIs(t, y.err, faultstore.ErrInjected)
			d := <-dup
			require.NoError(t, d.err, "x is stored: its duplicate must not be answered \"not stored\"")
			assert.True(t, d.res.Duplicate)
			assert.Equal(t, orig.FirstOffset, d.res.FirstOffset)
			assert.Equal(t, []string{"x", "hold"}, queueBodies(t, r.E, "t", 0))
		})
	}
}
