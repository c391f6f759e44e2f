package remote

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Producer.SendAsync over a Client whose append window is full (the
// broker holds every append) blocks, as backpressure, until a slot frees
// or its context ends: one whose context ends while it waits returns a
// future failed with the context's error (never sent), and one still
// waiting when the client closes returns a future failed with
// equeue.ErrClosed.
func TestProducer_SendAsyncOverAFullWindowBlocksUntilRoomOrContextEnds(t *testing.T) {
	c, err := Dial(serveHolding(t), nil)
	require.NoError(t, err)
	p, err := equeue.NewProducer(c, nil)
	require.NoError(t, err)
	ctx := context.Background()
	held := make([]*equeue.SendFuture, 0, streamWindow)
	for range streamWindow {
		held = append(held, p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("held")}))
	}
	for _, f := range held {
		select {
		case <-f.Done():
			_, err := f.Result(ctx)
			t.Fatalf("a send of the window completed while the broker holds it: %v", err)
		default:
		}
	}

	var waiting atomic.Int64
	waited := make(chan struct{}, 2)
	hook := func() {
		waiting.Add(1)
		waited <- struct{}{}
	}
	testHookSlotWait.Store(&hook)
	defer testHookSlotWait.Store(nil)

	// One whose context ends while it waits.
	cctx, cancel := context.WithCancel(ctx)
	returned := make(chan *equeue.SendFuture, 1)
	go func() { returned <- p.SendAsync(cctx, &equeue.Message{Topic: "t", Body: []byte("cancelled")}) }()
	<-waited
	select {
	case <-returned:
		t.Fatal("SendAsync returned while the window was full and its context live")
	default:
	}
	cancel()
	f := <-returned
	_, err = f.Result(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate, "never sent")

	// One still waiting when the client closes.
	go func() { returned <- p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("closed")}) }()
	<-waited
	require.NoError(t, c.Close())
	f = <-returned
	_, err = f.Result(ctx)
	require.ErrorIs(t, err, equeue.ErrClosed)
	for _, f := range held {
		_, err := f.Result(ctx)
		assert.ErrorIs(t, err, equeue.ErrIndeterminate, "held at the broker when the client closed")
	}
	assert.Equal(t, int64(2), waiting.Load())
	require.NoError(t, p.Close())
}
