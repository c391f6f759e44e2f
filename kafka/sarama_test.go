package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.ClientID = "sarama-test"
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	return cfg
}

// TestSarama_ProduceEveryCodec: sarama's sync producer with each codec.
func TestSarama_ProduceEveryCodec(t *testing.T) {
	e, addr := setup(t, map[string]int{"s": 1})
	ctx := testCtx(t)
	n := 0
	for _, codec := range []sarama.CompressionCodec{sarama.CompressionNone, sarama.CompressionGZIP, sarama.CompressionSnappy, sarama.CompressionLZ4, sarama.CompressionZSTD} {
		cfg := saramaConfig()
		cfg.Producer.Compression = codec
		cfg.Producer.Flush.Messages = 10
		p, err := sarama.NewSyncProducer([]string{addr}, cfg)
		require.NoError(t, err, codec.String())
		var msgs []*sarama.ProducerMessage
		for i := range 10 {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: "s", Key: sarama.StringEncoder(codec.String()),
				Value: sarama.StringEncoder(fmt.Sprintf("%s-%d-%s", codec, i, "padding padding padding padding"))})
		}
		require.NoError(t, p.SendMessages(msgs), codec.String())
		require.NoError(t, p.Close())
		n += len(msgs)
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "s", Offset: 0, Max: 100})
	require.NoError(t, err)
	require.Len(t, res.Messages, n)
	for i, m := range res.Messages {
		codec := m.Keys[0]
		assert.Equal(t, fmt.Sprintf("%s-%d-%s", codec, i%10, "padding padding padding padding"), string(m.Body))
	}
}

type saramaHandler struct {
	mu   sync.Mutex
	got  map[string]int
	want int
	done chan struct{}
}

func (h *saramaHandler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *saramaHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		s.MarkMessage(m, "")
		h.mu.Lock()
		h.got[string(m.Value)]++
		if len(h.got) == h.want {
			select {
			case <-h.done:
			default:
				close(h.done)
			}
		}
		h.mu.Unlock()
	}
	return nil
}

// TestSarama_ConsumerGroup: a sarama consumer group reads every message and
// its commits land in the engine.
func TestSarama_ConsumerGroup(t *testing.T) {
	e, addr := setup(t, map[string]int{"s": 2})
	ctx := testCtx(t)
	for i := range 20 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "s", Queue: i % 2, Messages: []*equeue.Message{{Body: fmt.Appendf(nil, "m%d", i)}}})
		require.NoError(t, err)
	}
	g, err := sarama.NewConsumerGroup([]string{addr}, "sg", saramaConfig())
	require.NoError(t, err)
	h := &saramaHandler{got: map[string]int{}, want: 20, done: make(chan struct{})}
	cctx, cancel := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() {
		var err error
		for cctx.Err() == nil && err == nil {
			err = g.Consume(cctx, []string{"s"}, h)
		}
		stopped <- err
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
		t.Fatal("sarama group did not get every message")
	}
	cancel()
	require.NoError(t, <-stopped)
	require.NoError(t, g.Close()) // commits what was marked
	h.mu.Lock()
	for v, n := range h.got {
		assert.Equal(t, 1, n, v)
	}
	h.mu.Unlock()
	offs, err := e.GroupOffsets(ctx, "sg")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "s", Queue: 0}: 10, {Topic: "s", Queue: 1}: 10}, offs)
}

// TestSarama_LogAppendTimeInProduceAnswer: with Options.LogAppendTime the
// produce answer carries the time the engine stored the records, as a
// broker whose topics use LogAppendTime does, so the producer learns the
// timestamp consumers see (sarama sets it on the message, the Java client
// on its RecordMetadata). A retried idempotent batch is answered with the
// time of the first store.
func TestSarama_LogAppendTimeInProduceAnswer(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "s", 1))
	addr := serve(t, e, &kafka.Options{LogAppendTime: true})
	p, err := sarama.NewSyncProducer([]string{addr}, saramaConfig())
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	created := time.UnixMilli(1_600_000_000_000)
	msg := &sarama.ProducerMessage{Topic: "s", Value: sarama.StringEncoder("v"), Timestamp: created}
	_, _, err = p.SendMessage(msg)
	require.NoError(t, err)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "s", Offset: 0, Max: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, res.Messages[0].StoredAt.UnixMilli(), msg.Timestamp.UnixMilli(), "the stored time, not the create time %d", created.UnixMilli())

	// An idempotent producer's retry is answered with the first store's time.
	cl := kclient(t, addr)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	first := produceRaw(ctx, t, cl, "s", 0, rawBatch(init.ProducerID, init.ProducerEpoch, 0, "a"))
	require.Equal(t, int16(0), first.ErrorCode)
	res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "s", Offset: first.BaseOffset, Max: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, res.Messages[0].StoredAt.UnixMilli(), first.LogAppendTime)
	time.Sleep(2 * time.Millisecond) // the retry comes in a later millisecond
	retry := produceRaw(ctx, t, cl, "s", 0, rawBatch(init.ProducerID, init.ProducerEpoch, 0, "a"))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, first.BaseOffset, retry.BaseOffset)
	assert.Equal(t, first.LogAppendTime, retry.LogAppendTime)

	// Without the option the answer says CreateTime (-1).
	plain := produceRaw(ctx, t, kclient(t, serve(t, e, nil)), "s", 0, rawBatch(-1, -1, -1, "b"))
	require.Equal(t, int16(0), plain.ErrorCode)
	assert.Equal(t, int64(-1), plain.LogAppendTime)
}
