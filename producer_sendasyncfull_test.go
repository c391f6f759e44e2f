package equeue_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// sendersWaitingForTheWriter counts the SendAsync calls parked in the
// engine's writer queue (Engine.enqueue, waiting in its select): one
// passing through enqueue is running, not parked, and the engine's own
// commands that wait there too are not counted.
func sendersWaitingForTheWriter() int {
	buf := make([]byte, 1<<22)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		parked := strings.Contains(header, "[select") || strings.Contains(header, "[chan send")
		if parked && strings.Contains(g, "equeue.(*Engine).enqueue(") && strings.Contains(g, "equeue.(*Producer).SendAsync(") {
			n++
		}
	}
	return n
}

// Producer.SendAsync in process returns at once while the engine's writer
// queue has room; once it is full (the store's write held) SendAsync
// blocks, as backpressure, until room frees or its context ends. One
// whose context ends while it waits returns a future failed with the
// context's error, and is not stored; the others are stored once the
// write goes on.
func TestProducer_SendAsyncBlocksWhileTheWriterQueueIsFull(t *testing.T) {
	ctx, cancelAll := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancelAll()
	fs := faultstore.New(store.NewMemory())
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()

	release := make(chan struct{})
	writing := make(chan struct{}) // closed once the writer is held in a write
	var once sync.Once
	fs.OnWrite(func(*store.Batch) error {
		once.Do(func() { close(writing) })
		<-release
		return nil
	})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	// Send until a SendAsync blocks: the store holds the first write, the
	// queue fills behind it.
	stop := make(chan struct{})
	fed := make(chan []*equeue.SendFuture, 1)
	go func() {
		var fs []*equeue.SendFuture
		defer func() { fed <- fs }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			fs = append(fs, p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("fed")}))
		}
	}()
	// Once the writer is held in the store's write it takes nothing from
	// its queue: a sender waiting for room waits until the write goes on.
	<-writing
	require.Eventually(t, func() bool { return sendersWaitingForTheWriter() == 1 }, time.Minute, time.Millisecond,
		"a SendAsync waits for room in the writer queue")

	cctx, cancel := context.WithCancel(ctx)
	returned := make(chan *equeue.SendFuture, 1)
	go func() { returned <- p.SendAsync(cctx, &equeue.Message{Topic: "t", Body: []byte("cancelled")}) }()
	require.Eventually(t, func() bool { return sendersWaitingForTheWriter() == 2 }, time.Minute, time.Millisecond,
		"the next SendAsync waits too")
	select {
	case <-returned:
		t.Fatal("SendAsync returned while the writer queue was full and its context live")
	default:
	}
	cancel()
	f := <-returned
	_, err = f.Result(ctx)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate, "never queued")

	close(stop)
	close(release)
	released = true
	futures := <-fed
	for i, f := range futures {
		res, err := f.Result(ctx)
		require.NoError(t, err, "send %d", i)
		require.Equal(t, int64(i), res.Offset, "send %d", i)
	}
	res, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("after")})
	require.NoError(t, err)
	require.Equal(t, int64(len(futures)), res.Offset, "the cancelled send took no offset")
}
