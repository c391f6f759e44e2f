package equeue_test

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// holdMetaWrite makes the store hold the first write whose metadata value
// holds marker until the returned release runs (also at the end of the
// test); inWrite is closed once it holds it. Other writes go through.
func holdMetaWrite(t *testing.T, r *faultRig, marker string) (inWrite <-chan struct{}, release func()) {
	t.Helper()
	return holdWriteWhere(t, r, func(b *store.Batch) bool {
		return slices.ContainsFunc(b.Meta, func(op store.MetaOp) bool { return bytes.Contains(op.Value, []byte(marker)) })
	})
}

// TestSetQueueWritable_NoSendLandsAfterItReturned sends to a queue while
// SetQueueWritable closes it: the send checks the queue open before the
// close is stored and reaches the writer right after. Once SetQueueWritable
// returned, the queue's end does not move: the send is refused
// (ErrQueueNotWritable) or stored below the end seen when the close
// returned, so a consumer that drained the queue up to that end misses
// nothing.
func TestSetQueueWritable_NoSendLandsAfterItReturned(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: msgs("before")})
			require.NoError(t, err)

			inWrite, release := holdMetaWrite(t, r, `"read_only":[0]`)
			closed := make(chan error, 1)
			go func() { closed <- e.SetQueueWritable(ctx, "t", 0, false) }()
			<-inWrite // the close is in the store's write; the queue still reads writable

			type sent struct {
				res equeue.AppendResult
				err error
			}
			late := make(chan sent, 1)
			go func() {
				res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: msgs("late")})
				late <- sent{res, err}
			}()
			eventually(t, 5*time.Second, func() bool { return equeue.QueuedCommands(e) == 1 }, "the send waits for the writer")
			release()
			require.NoError(t, <-closed)
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			end := info.Queues[0].MaxOffset
			require.False(t, info.Queues[0].Writable)

			s := <-late
			if s.err != nil {
				require.ErrorIs(t, s.err, equeue.ErrQueueNotWritable)
			} else {
				require.Less(t, s.res.FirstOffset, end, "a send stored after the queue was closed: a drain up to %d misses it", end)
			}
			info, err = e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, end, info.Queues[0].MaxOffset, "the closed queue's end moved after SetQueueWritable returned")
		})
	}
}
