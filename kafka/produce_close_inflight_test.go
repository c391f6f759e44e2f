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

// heldAppends is an engine whose appends wait, once entered is read,
// until release is closed; ctxs gets the context of each.
type heldAppends struct {
	*equeue.Engine
	entered chan context.Context
	release chan struct{}
}

func (b *heldAppends) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	b.entered <- ctx
	<-b.release
	return b.Engine.Append(ctx, req)
}

// TestProduce_CloseWaitsForTheAppendsInFlight: Server.Close does not
// cancel a batch's append in flight, but waits for it, so that what the
// partition holds is settled when Close returns: a listener started then
// reads the batch back and acknowledges its retry where it was stored.
// Before, Close cancelled the append, which the engine may still store
// after Close returned (equeue.ErrIndeterminate): a listener started at
// once did not find it, and the producer's retry, or franz-go's resend
// of its batches under a new epoch (after OUT_OF_ORDER_SEQUENCE_NUMBER
// for a batch stored behind the read), stored its records twice.
func TestProduce_CloseWaitsForTheAppendsInFlight(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	held := &heldAppends{Engine: e, entered: make(chan context.Context, 1), release: make(chan struct{})}
	s, err := kafka.NewServer(held, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- s.Serve(lis) }()

	const pid, epoch = int64(7011), int16(0)
	batch := rawBatch(pid, epoch, 0, "a", "b")
	cl := kclient(t, lis.Addr().String())
	sent := make(chan error, 1)
	go func() {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = batch
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		_, err := req.RequestWith(ctx, cl)
		sent <- err
	}()
	appendCtx := <-held.entered

	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	<-kafka.Closing(s)
	assert.NoError(t, appendCtx.Err(), "the append in flight is not cancelled by Close")
	select {
	case <-closed:
		t.Error("Close returned before the append in flight")
	default:
	}
	close(held.release)
	require.NoError(t, <-closed)
	require.ErrorIs(t, <-served, kafka.ErrServerClosed)
	require.Error(t, <-sent, "the connection was closed before the answer")
	require.Equal(t, int64(2), storedCount(t, e, "t"), "the batch in flight is stored")

	// Restarted, the listener finds the batch: its retry is acknowledged.
	again := kclient(t, serve(t, e, nil))
	retry := produceRaw(ctx, t, again, "t", 0, batch)
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset)
	assert.Equal(t, int64(2), storedCount(t, e, "t"), "stored once")
}
