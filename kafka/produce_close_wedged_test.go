package kafka_test

import (
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/kafka"
	"github.com/equeue-go/equeue/store"
)

// TestProduce_CloseBoundedByAWedgedWrite: a store whose Write never
// returns (a wedged disk) holds a batch's append; Server.Close still
// returns once the appends in flight had their time to settle
// (appendSettle), and the producer is not told its batch was stored: its
// request ends without an answer, an outcome it must take as unknown.
func TestProduce_CloseBoundedByAWedgedWrite(t *testing.T) {
	kafka.SetAppendSettle(t, 100*time.Millisecond)
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	entered := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	fs.OnWrite(func(*store.Batch) error {
		once.Do(func() { close(entered) })
		<-release
		return nil
	})
	// Released before the engine closes (cleanups run last first).
	t.Cleanup(func() { close(release) })

	s, err := kafka.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()

	cl := kclient(t, lis.Addr().String())
	type answer struct {
		resp *kmsg.ProduceResponse
		err  error
	}
	sent := make(chan answer, 1)
	go func() {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 60_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch(7101, 0, 0, "a")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, cl)
		sent <- answer{resp, err}
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the append never reached the store")
	}

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("Server.Close did not return while a store write is wedged")
	}
	require.ErrorIs(t, <-served, kafka.ErrServerClosed)
	// No answer at all, as the README says: its connection is closed,
	// and the producer takes the batch's outcome as unknown.
	got := <-sent
	require.Error(t, got.err, "the producer gets no answer")
	assert.Nil(t, got.resp)
}
