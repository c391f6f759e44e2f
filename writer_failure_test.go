package equeue_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// sendShape is one kind of send the failure tests repeat.
type sendShape struct {
	name  string
	n     int  // messages per send
	dedup bool // the topic has a dedup window and messages carry IDs
	delay bool
}

var sendShapes = []sendShape{
	{name: "plain", n: 1},
	{name: "batch", n: 3},
	{name: "dedup", n: 2, dedup: true},
	{name: "delayed", n: 2, delay: true},
	{name: "delayed-dedup", n: 1, dedup: true, delay: true},
}

// send appends s.n messages tagged with tag to t/0.
func (s sendShape) send(e *equeue.Engine, tag string) (equeue.AppendResult, error) {
	ms := make([]*equeue.Message, s.n)
	for i := range ms {
		ms[i] = &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%s-%d", tag, i)}
		if s.dedup {
			ms[i].ID = fmt.Sprintf("%s-%d", tag, i)
		}
		if s.delay {
			ms[i].Delay = 20 * time.Millisecond
		}
	}
	return e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: ms})
}

func (s sendShape) bodies(tags ...string) []string {
	var out []string
	for _, tag := range tags {
		for i := 0; i < s.n; i++ {
			out = append(out, fmt.Sprintf("%s-%d", tag, i))
		}
	}
	return out
}

func (s sendShape) rig(t *testing.T, kind string) *faultRig {
	r := newFaultRig(t, kind, nil)
	o := equeue.TopicOptions{Queues: 1}
	if s.dedup {
		o.DedupWindow = time.Hour
	}
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", o))
	return r
}

// settle waits until no delayed message is pending and t/0 holds want (in
// any order for delayed sends).
func settle(t *testing.T, r *faultRig, s sendShape, want []string) {
	t.Helper()
	eventually(t, waitLong, func() bool {
		return metaKeys(t, r.FS, "d/") == 0 && len(queueBodies(t, r.E, "t", 0)) >= len(want)
	}, "delayed messages moved")
	if s.delay {
		assert.ElementsMatch(t, want, queueBodies(t, r.E, "t", 0))
	} else {
		assert.Equal(t, want, queueBodies(t, r.E, "t", 0))
	}
}

// A Write that fails stores nothing: the sender gets the store's error (not
// ErrIndeterminate), the next send takes the same offsets and, on a dedup
// topic, the same IDs are not duplicates; after a reopen only that is there.
func TestWriter_FailedWriteIsNotStored(t *testing.T) {
	for _, kind := range storeKinds {
		for _, s := range sendShapes {
			t.Run(kind+"/"+s.name, func(t *testing.T) {
				r := s.rig(t, kind)
				r.FS.FailWrites(1)
				_, err := s.send(r.E, "x")
				require.ErrorIs(t, err, faultstore.ErrInjected)
				assert.NotErrorIs(t, err, equeue.ErrIndeterminate)

				res, err := s.send(r.E, "x") // the same IDs again
				require.NoError(t, err)
				assert.False(t, res.Duplicate, "nothing of the failed send was remembered")
				if !s.delay {
					assert.Equal(t, int64(0), res.FirstOffset, "the failed send took no offset")
				}
				settle(t, r, s, s.bodies("x"))
				if kind == "badger" {
					r.reopen()
					settle(t, r, s, s.bodies("x"))
				}
			})
		}
	}
}

// A Write that succeeds and a Sync that fails keep the batch: the sender
// gets ErrIndeterminate, the batch's offsets and delay slots are not reused,
// its dedup entries stay (a retry is a duplicate), and after a reopen it is
// there once, before the next send.
func TestWriter_FailedSyncKeepsTheBatch(t *testing.T) {
	for _, kind := range storeKinds {
		for _, s := range sendShapes {
			t.Run(kind+"/"+s.name, func(t *testing.T) {
				r := s.rig(t, kind)
				r.FS.FailSyncs(1)
				_, err := s.send(r.E, "x")
				require.ErrorIs(t, err, equeue.ErrIndeterminate)
				require.ErrorIs(t, err, faultstore.ErrInjected)
				require.ErrorIs(t, r.E.StoreFailure(), faultstore.ErrInjected)

				// The engine writes nothing more until it is reopened, and
				// readers never see the batch of unknown outcome.
				_, err = s.send(r.E, "y")
				require.ErrorIs(t, err, equeue.ErrStoreFailed)
				assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "refused: not stored")
				assert.Empty(t, queueBodies(t, r.E, "t", 0))

				r.reopen()
				require.NoError(t, r.E.StoreFailure())
				if s.dedup {
					res, err := s.send(r.E, "x")
					require.NoError(t, err)
					assert.True(t, res.Duplicate, "the kept batch's IDs are remembered")
				}
				res, err := s.send(r.E, "y")
				require.NoError(t, err)
				if !s.delay {
					assert.Equal(t, int64(s.n), res.FirstOffset, "the kept batch's offsets are not reused")
				}
				settle(t, r, s, s.bodies("x", "y"))
				r.reopen()
				settle(t, r, s, s.bodies("x", "y"))
			})
		}
	}
}

// Issue 11, scenario 1a: a delayed send whose fsync failed kept its delay
// slot, so a later delayed send to another topic cannot take it and be
// delivered into the first one's topic.
func TestWriter_FailedSyncDoesNotReuseDelaySlot(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			for _, name := range []string{"a", "b"} {
				require.NoError(t, r.E.CreateTopic(ctxBG, name, 1))
			}
			p := newProducer(t, r.E, nil)
			r.FS.FailSyncs(1)
			_, err := p.Send(ctxBG, &equeue.Message{Topic: "a", Body: []byte("for-a"), Delay: 20 * time.Millisecond})
			require.Error(t, err)
			assert.ErrorIs(t, err, equeue.ErrIndeterminate)
			p.Close()
			p = newProducer(t, r.reopen(), nil)
			_, err = p.Send(ctxBG, &equeue.Message{Topic: "b", Body: []byte("for-b"), Delay: 40 * time.Millisecond})
			require.NoError(t, err)
			eventually(t, waitLong, func() bool {
				return metaKeys(t, r.FS, "d/") == 0 && len(queueBodies(t, r.E, "b", 0)) > 0
			}, "delayed messages moved")
			assert.Equal(t, []string{"for-b"}, queueBodies(t, r.E, "b", 0))
			assert.Equal(t, []string{"for-a"}, queueBodies(t, r.E, "a", 0), "topic a gets only its own (kept) message")
		})
	}
}

// Issue 11, scenario 1b: a SendBatch whose fsync failed is not merged
// behind the next send after a reopen: it keeps offsets 0-2, the next send
// (after the reopen that lifts the stop) lands at 3.
func TestWriter_FailedSyncBatchKeepsOffsetsAfterReopen(t *testing.T) {
	r := newFaultRig(t, "badger", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	p := newProducer(t, r.E, nil)
	r.FS.FailSyncs(1)
	_, err := p.SendBatch(ctxBG, msgs("b0", "b1", "b2"))
	require.Error(t, err)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate)
	p.Close()
	p = newProducer(t, r.reopen(), nil)
	res, err := p.Send(ctxBG, &equeue.Message{Topic: "t", Body: []byte("next")})
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.Offset)
	e := r.reopen()
	assert.Equal(t, []string{"b0", "b1", "b2", "next"}, queueBodies(t, e, "t", 0))
}

// Metadata writes go through the writer: a failed write is reported and
// changes nothing, a failed sync is reported as indeterminate.
func TestWriter_MetadataFailures(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	r.FS.FailWrites(1)
	err := r.E.CreateTopic(ctxBG, "t", 1)
	require.ErrorIs(t, err, faultstore.ErrInjected)
	r.FS.FailSyncs(1)
	err = r.E.CreateTopic(ctxBG, "u", 1)
	require.True(t, errors.Is(err, equeue.ErrIndeterminate), "got %v", err)
}

// Under SyncInterval a background fsync that fails stops the engine's
// writes as one a send waits for does: later sends are refused (nothing
// stored) until a reopen, which finds every send acknowledged before.
func TestWriter_FailedIntervalSyncStopsWrites(t *testing.T) {
	r := newFaultRig(t, "memory", &equeue.Options{Sync: equeue.SyncInterval(5 * time.Millisecond)})
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("before")})
	require.NoError(t, err)
	r.FS.FailSyncs(1)
	eventually(t, waitLong, func() bool { return r.E.StoreFailure() != nil }, "the interval fsync failed")
	require.ErrorIs(t, r.E.StoreFailure(), faultstore.ErrInjected)
	_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("after")})
	require.ErrorIs(t, err, equeue.ErrStoreFailed)
	e := r.reopen()
	require.NoError(t, e.StoreFailure())
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("reopened")})
	require.NoError(t, err)
	assert.Equal(t, []string{"before", "reopened"}, queueBodies(t, e, "t", 0))
}
