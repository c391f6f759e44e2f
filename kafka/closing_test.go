package kafka_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// closingEngine is an engine closing under the listener: its writes and
// reads fail with ErrClosed.
type closingEngine struct{ *equeue.Engine }

func (closingEngine) Append(context.Context, *equeue.AppendRequest) (equeue.AppendResult, error) {
	return equeue.AppendResult{}, equeue.ErrClosed
}

func (closingEngine) Pull(context.Context, *equeue.PullRequest) (equeue.PullResult, error) {
	return equeue.PullResult{}, equeue.ErrClosed
}

// TestClosing_ProduceAndFetchAreToldToLookTheLeaderUp: an engine closing
// under the listener answers produce and fetch NOT_LEADER_OR_FOLLOWER, as
// a Kafka broker shutting down does, which every client handles by
// refreshing its metadata and retrying; COORDINATOR_NOT_AVAILABLE, which
// it answered, is a group code that the Java consumer's fetcher does not
// expect (it throws IllegalStateException).
func TestClosing_ProduceAndFetchAreToldToLookTheLeaderUp(t *testing.T) {
	ctx := testCtx(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	c := kclient(t, serve(t, closingEngine{e}, nil))

	prod := kmsg.NewPtrProduceRequest()
	prod.Acks, prod.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = "t"
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = recordBatch(t, "v")
	pt.Partitions = append(pt.Partitions, pp)
	prod.Topics = append(prod.Topics, pt)
	resp, err := c.Request(ctx, prod)
	require.NoError(t, err)
	assert.Equal(t, int16(6), resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode, "NOT_LEADER_OR_FOLLOWER")

	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxBytes = 1 << 20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	resp, err = c.Request(ctx, fetch)
	require.NoError(t, err)
	assert.Equal(t, int16(6), resp.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode, "NOT_LEADER_OR_FOLLOWER")
}
