package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/equeue-go/equeue/kafka"
)

// TestRights_TokenWithoutRightsGetsNothing: a token that authenticates but
// holds no right (as remote answers it PermissionDenied for every call)
// reads nothing through the calls that need any right: Metadata lists no
// topic, ListOffsets shows no offset and FindCoordinator names no
// coordinator, each refused with an authorization error. A token with a
// right gets the answers.
func TestRights_TokenWithoutRightsGetsNothing(t *testing.T) {
	ctx := testCtx(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "secret-topic", 1))
	addr := serve(t, e, &kafka.Options{Tokens: map[string]kafka.Rights{"none": 0, "r": kafka.RightConsume}})
	client := func(token string) *kgo.Client {
		return kclient(t, addr, kgo.SASL(plain.Auth{User: "u", Pass: token}.AsMechanism()), kgo.RequestRetries(0))
	}
	// Each request goes to the listener itself: a client would otherwise
	// ask Metadata first to route it.
	ask := func(cl *kgo.Client) (*kmsg.MetadataResponse, *kmsg.ListOffsetsResponse, *kmsg.FindCoordinatorResponse) {
		t.Helper()
		c := cl.SeedBrokers()[0]
		md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, c)
		require.NoError(t, err)
		lo := kmsg.NewPtrListOffsetsRequest()
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = "secret-topic"
		lp := kmsg.NewListOffsetsRequestTopicPartition()
		lp.Timestamp = -1
		lt.Partitions = append(lt.Partitions, lp)
		lo.Topics = append(lo.Topics, lt)
		los, err := lo.RequestWith(ctx, c)
		require.NoError(t, err)
		fc := kmsg.NewPtrFindCoordinatorRequest()
		fc.CoordinatorKey, fc.CoordinatorKeys = "g", []string{"g"} // v0-3, v4
		fcs, err := fc.RequestWith(ctx, c)
		require.NoError(t, err)
		return md, los, fcs
	}

	md, los, fcs := ask(client("r"))
	require.Len(t, md.Topics, 1, "a token with a right sees the topic")
	assert.Equal(t, int16(0), los.Topics[0].Partitions[0].ErrorCode)
	assert.Equal(t, []int16{0}, coordinatorCodes(fcs))

	md, los, fcs = ask(client("none"))
	assert.Empty(t, md.Topics, "a token without rights is told of no topic")
	require.Len(t, los.Topics, 1)
	assert.Equal(t, int16(29), los.Topics[0].Partitions[0].ErrorCode, "TOPIC_AUTHORIZATION_FAILED")
	assert.Equal(t, int64(-1), los.Topics[0].Partitions[0].Offset)
	assert.Equal(t, []int16{30}, coordinatorCodes(fcs), "GROUP_AUTHORIZATION_FAILED")
}

// coordinatorCodes are the error codes of a FindCoordinator answer: of
// each key (v4+), or the one of v0-3.
func coordinatorCodes(resp *kmsg.FindCoordinatorResponse) []int16 {
	if resp.GetVersion() < 4 {
		return []int16{resp.ErrorCode}
	}
	var out []int16
	for _, c := range resp.Coordinators {
		out = append(out, c.ErrorCode)
	}
	return out
}
