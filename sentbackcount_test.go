package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// sentBack returns QueueStats.SentBack of topic's queue 0.
func sentBack(e *equeue.Engine, topic string) uint64 {
	for _, q := range e.QueueStats() {
		if q.Topic == topic && q.Queue == 0 {
			return q.SentBack
		}
	}
	return 0
}

// A send-back whose caller stopped waiting (its context ended while the
// write was queued: ErrIndeterminate) and whose write then stored the
// copy counts in QueueStats.SentBack (equeue_dead_letters_total,
// equeue_retries_total) as any stored send-back does. It was not counted,
// and the caller's repeat, answered as a duplicate, stores and counts
// nothing: the message was missing from the count for good.
func TestQueueStats_SentBackCountsACopyStoredAfterItsCallerLeft(t *testing.T) {
	ctx := ctxT(t)
	e, fs, g := openMarked(t, 1, nil)
	dlq := equeue.DLQTopic("g")
	req := &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true}

	held, hold := make(chan struct{}), make(chan struct{})
	fs.OnWrite(func(b *store.Batch) error {
		for _, op := range b.Meta {
			if string(op.Key[:4]) == "sbk/" { // the write of the copy and its mark
				close(held)
				<-hold
			}
		}
		return nil
	})
	short, cancel := context.WithCancel(ctx)
	go func() {
		<-held
		cancel()
	}()
	_, err := e.SendBack(short, req)
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	require.ErrorIs(t, err, context.Canceled)
	close(hold)

	res, err := e.SendBack(ctx, req) // the caller's repeat waits for the held write
	require.NoError(t, err)
	require.True(t, res.Duplicate, "the held write stored the copy")
	require.Equal(t, int64(1), queueEnd(t, e, dlq))
	assert.Equal(t, uint64(1), sentBack(e, dlq), "the stored copy is counted once")
}
