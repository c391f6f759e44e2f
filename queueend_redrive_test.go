package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// A redriven mark proves the dead letter at its offset was stored: after
// damage that took the tail of the dead-letter topic with the marked dead
// letters, a later dead letter must not get a marked offset, where it
// would be listed as redriven and never redriven (found by review: the
// next dead letters were stored at the marked offsets).
func TestEngine_StoreEndBelowARedrivenMarkReusesNoOffset(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	sendNAndClose(t, dir, "t", 6, 0)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	g, pulled := joinAndPull(t, e, "g", "m", "t")
	require.Len(t, pulled.Messages, 6)
	for off := range int64(4) { // dead letters 0..3
		_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: off, Attempts: 1, DeadLetter: true})
		require.NoError(t, err)
	}
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{2, 3}})
	require.NoError(t, err)
	require.Equal(t, 2, n)
	dlq, err := e.Topic(ctx, equeue.DLQTopic("g"))
	require.NoError(t, err)
	require.Equal(t, int64(4), dlq.Queues[0].MaxOffset)
	require.NoError(t, e.Close())
	loseTail(t, dir, store.QueueID{Topic: dlq.ID, Queue: 0}, 2, 4)

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	g, _ = joinAndPull(t, e, "g", "m", "t")
	for _, off := range []int64{4, 5} {
		_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: off, Attempts: 1, DeadLetter: true})
		require.NoError(t, err)
	}
	list, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	fresh := map[int64]bool{} // origin offset -> redriven
	for _, d := range list {
		if d.Message.Offset >= 4 {
			fresh[d.Message.Offset] = d.Redriven
			assert.GreaterOrEqual(t, d.Offset, int64(4), "dead letter of %d gets an offset past the marked ones", d.Message.Offset)
		}
	}
	assert.Equal(t, map[int64]bool{4: false, 5: false}, fresh, "the new dead letters are listed, not redriven")
	n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Equal(t, 4, n, "the dead letters never redriven are redriven: 0, 1 and the two new ones")
}
