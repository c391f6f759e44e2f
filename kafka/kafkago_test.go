package kafka_test

import (
	"fmt"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/compress"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestKafkaGo_WriterAndGroupReader: segmentio/kafka-go writes with each
// codec, then a group reader reads everything and commits.
func TestKafkaGo_WriterAndGroupReader(t *testing.T) {
	e, addr := setup(t, map[string]int{"kg": 2})
	ctx := testCtx(t)
	want := map[string]bool{}
	tr := &kafkago.Transport{}
	defer tr.CloseIdleConnections()
	for _, codec := range []compress.Compression{0, compress.Gzip, compress.Snappy, compress.Lz4, compress.Zstd} {
		w := &kafkago.Writer{Addr: kafkago.TCP(addr), Topic: "kg", Balancer: &kafkago.RoundRobin{}, RequiredAcks: kafkago.RequireAll,
			Compression: codec, BatchTimeout: time.Millisecond, Transport: tr}
		var msgs []kafkago.Message
		for i := range 10 {
			v := fmt.Sprintf("%v-%d", codec, i)
			want[v] = true
			msgs = append(msgs, kafkago.Message{Key: []byte("k"), Value: []byte(v), Headers: []kafkago.Header{{Key: "c", Value: []byte(fmt.Sprint(codec))}}})
		}
		require.NoError(t, w.WriteMessages(ctx, msgs...), "codec %v", codec)
		require.NoError(t, w.Close())
	}
	r := kafkago.NewReader(kafkago.ReaderConfig{Brokers: []string{addr}, GroupID: "kgg", Topic: "kg", MaxWait: 100 * time.Millisecond,
		HeartbeatInterval: 100 * time.Millisecond, StartOffset: kafkago.FirstOffset})
	got := map[string]int{}
	for len(got) < len(want) {
		m, err := r.FetchMessage(ctx)
		require.NoError(t, err)
		got[string(m.Value)]++
		require.Len(t, m.Headers, 1)
		require.NoError(t, r.CommitMessages(ctx, m))
	}
	require.NoError(t, r.Close())
	for v := range want {
		assert.Equal(t, 1, got[v], v)
	}
	offs, err := e.GroupOffsets(ctx, "kgg")
	require.NoError(t, err)
	assert.Equal(t, int64(50), offs[equeue.QueueRef{Topic: "kg", Queue: 0}]+offs[equeue.QueueRef{Topic: "kg", Queue: 1}])
}
