package kafka_test

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// heldChunks is an engine that takes one message per append (more is
// equeue.ErrBatchTooLarge, so a batch is stored in chunks) and whose
// appends wait, once entered is read, until release is closed.
type heldChunks struct {
	*equeue.Engine
	entered chan struct{}
	release chan struct{}
}

func (b *heldChunks) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if len(req.Messages) > 1 {
		return equeue.AppendResult{}, equeue.ErrBatchTooLarge
	}
	b.entered <- struct{}{}
	<-b.release
	return b.Engine.Append(ctx, req)
}

// TestProduce_CloseStartsNoFurtherChunk: Close waits for the chunk of a
// batch in flight, but the connection starts no append after its end.
// Before, each later chunk of the batch had an append context of its own,
// cancelled only appendSettle after it began: Close stored records it had
// not been asked to wait for, and, with a stalled store, took appendSettle
// for each chunk, not the 30 s at most its doc says.
func TestProduce_CloseStartsNoFurtherChunk(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	held := &heldChunks{Engine: e, entered: make(chan struct{}, 4), release: make(chan struct{})}
	s, err := kafka.NewServer(held, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()

	cl := kclient(t, lis.Addr().String())
	sent := make(chan error, 1)
	go func() {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch(7012, 0, 0, "a", "b")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		_, err := req.RequestWith(ctx, cl)
		sent <- err
	}()
	<-held.entered // the first chunk's append

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	<-kafka.Closing(s)
	close(held.release)
	require.NoError(t, <-closed)
	require.ErrorIs(t, <-served, kafka.ErrServerClosed)
	require.Error(t, <-sent, "the connection was closed before the answer")
	assert.Len(t, held.entered, 0, "no append started after the connection's end")
	assert.Equal(t, int64(1), storedCount(t, e, "t"), "the chunk in flight alone is stored")
}
