package kafka_test

import (
	"fmt"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/equeue-go/equeue/kafka"
)

// TestProduce_DeletedTopicsDropProducerStates: the listener keeps, per
// idempotent producer and partition, the sequence numbers of its last
// batches. Deleting a topic through the listener kept those of its
// partitions until they expired, a day after their last batch: a
// producer that lives on while topics are made and deleted (per job)
// left them behind each time. They now go with the topic.
func TestProduce_DeletedTopicsDropProducerStates(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	s, err := kafka.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		require.ErrorIs(t, <-done, kafka.ErrServerClosed)
	})
	addr := lis.Addr().String()
	cl := kclient(t, addr) // idempotent by default
	adm := kadmin(t, addr)
	for i := range 3 {
		topic := fmt.Sprintf("job-%d", i)
		require.NoError(t, e.CreateTopic(ctx, topic, 2))
		for _, k := range []string{"a", "b", "c"} {
			require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte("v")}).FirstErr())
		}
		require.Positive(t, kafka.ProducerStates(s, topic))
		res, err := adm.DeleteTopics(ctx, topic)
		require.NoError(t, err)
		require.NoError(t, res.Error())
		require.Zero(t, kafka.ProducerStates(s, topic), "sequence states left of deleted topic %s", topic)
	}
}
