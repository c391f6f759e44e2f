package kafka_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestProduce_RefusedPartitionHasNoBaseOffset: a partition refused (one
// the topic does not have, a batch that is not one, a sequence out of
// order, acks the listener does not take) is answered with base offset
// -1, as Kafka answers it (ProduceResponse.PartitionResponse), not with
// offset 0, which names a record the topic may well hold: nothing of the
// batch was stored.
func TestProduce_RefusedPartitionHasNoBaseOffset(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(-1, -1, -1, "a")).ErrorCode)
	for _, c := range []struct {
		name  string
		part  int32
		batch []byte
	}{
		{"no such partition", 5, rawBatch(-1, -1, -1, "x")},
		{"no batch", 0, nil},
		{"a damaged batch", 0, []byte("not a record batch at all")},
	} {
		p := produceRaw(ctx, t, cl, "t", c.part, c.batch)
		require.NotEqual(t, int16(0), p.ErrorCode, c.name)
		assert.Equal(t, int64(-1), p.BaseOffset, c.name)
	}
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(init.ProducerID, init.ProducerEpoch, 0, "b")).ErrorCode)
	p := produceRaw(ctx, t, cl, "t", 0, rawBatch(init.ProducerID, init.ProducerEpoch, 5, "c"))
	require.Equal(t, int16(45), p.ErrorCode, "out of order")
	assert.Equal(t, int64(-1), p.BaseOffset, "out of order")

	// franz-go sends its own acks: this request goes on a plain
	// connection.
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	req := kmsg.NewPtrProduceRequest()
	req.SetVersion(7)
	req.Acks, req.TimeoutMillis = 2, 10_000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = rawBatch(-1, -1, -1, "d")
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	body, err := rawRequest(t, nc, 1, req)
	require.NoError(t, err)
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(7)
	require.NoError(t, resp.ReadFrom(body))
	assert.Equal(t, int16(21), resp.Topics[0].Partitions[0].ErrorCode, "acks 2")
	assert.Equal(t, int64(-1), resp.Topics[0].Partitions[0].BaseOffset, "acks 2")

	n, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), n.Queues[0].MaxOffset, "only the two batches accepted are stored")
}
