package cluster_test

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/kafka"
)

// TestCluster_KafkaValidateOnlyCreateAnswersTheDefaultPartitions: a Kafka
// CreateTopics with validate_only and the default partition count (-1),
// sent to a cluster node's listener, is answered the partition count the
// create makes (the node's Engine.DefaultQueues), as from a lone engine;
// before, the node did not tell its default and the answer was -1.
func TestCluster_KafkaValidateOnlyCreateAnswersTheDefaultPartitions(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	c := newCluster(t, 1, func(o *cluster.Options) {
		o.KafkaAddr = lis.Addr().String()
		o.Engine = &equeue.Options{DefaultQueues: 3}
	})
	s, err := kafka.NewServer(c.nodes[0], &kafka.Options{AdvertisedAddr: lis.Addr().String()})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		require.ErrorIs(t, <-done, kafka.ErrServerClosed)
	})
	cl, err := kgo.NewClient(kgo.SeedBrokers(lis.Addr().String()))
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	create := func(validateOnly bool) kmsg.CreateTopicsResponseTopic {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.ValidateOnly, req.TimeoutMillis = validateOnly, 10_000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "d", -1, -1
		req.Topics = append(req.Topics, rt)
		var resp *kmsg.CreateTopicsResponse
		eventually(t, 20*time.Second, func() error { // until the node serves
			r, err := req.RequestWith(ctx, cl)
			if err == nil && len(r.Topics) == 1 && r.Topics[0].ErrorCode == 0 {
				resp = r
				return nil
			}
			if err != nil {
				return err
			}
			return fmt.Errorf("answered %+v", r.Topics)
		})
		return resp.Topics[0]
	}
	validated := create(true)
	assert.Equal(t, int32(3), validated.NumPartitions, "the node's engine's DefaultQueues")
	created := create(false)
	assert.Equal(t, int32(3), created.NumPartitions)
	dq, ok := any(c.nodes[0]).(interface{ DefaultQueues() int })
	if assert.True(t, ok, "a Node tells its default queue count") {
		assert.Equal(t, 3, dq.DefaultQueues())
	}
}
