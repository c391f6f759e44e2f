package kafka_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// A listener over namespace a answers the calls that list or describe
// (Metadata, ListGroups, DescribeGroups, OffsetFetch, ListOffsets) alike
// for a name namespace b has and for one nobody has, by b's plain name
// and by the engine's: nothing it says shows b's topics, groups or
// offsets, or tells whether b has them.
func TestKafka_NamespaceListenerTellsNothingOfAnotherNamespace(t *testing.T) {
	ctx := testCtx(t)
	e := openEngine(t, nil)
	a, err := e.Namespace("a")
	require.NoError(t, err)
	b, err := e.Namespace("b")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopic(ctx, "mine", 1))
	require.NoError(t, b.CreateTopic(ctx, "orders", 2))
	_, err = b.Append(ctx, &equeue.AppendRequest{Topic: "orders", Messages: []*equeue.Message{{Body: []byte("secret-b")}}})
	require.NoError(t, err)
	require.NoError(t, b.CommitGroupOffsets(ctx, "kg", map[equeue.QueueRef]int64{{Topic: "orders", Queue: 0}: 1}))
	addr := serve(t, a, nil)
	br := kclient(t, addr).SeedBrokers()[0]

	// The answer to a request naming topic and group, as text with the
	// names taken out.
	answer := func(kind, topic, group string) string {
		var req kmsg.Request
		switch kind {
		case "Metadata":
			r := kmsg.NewPtrMetadataRequest()
			r.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(topic)}}
			r.AllowAutoTopicCreation = false
			req = r
		case "DescribeGroups":
			r := kmsg.NewPtrDescribeGroupsRequest()
			r.Groups = []string{group}
			req = r
		case "OffsetFetch":
			r := kmsg.NewPtrOffsetFetchRequest()
			r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: topic, Partitions: []int32{0, 1}}}}}
			req = namedFetch{r} // by topic name: v9 at most
		case "ListOffsets":
			r := kmsg.NewPtrListOffsetsRequest()
			r.ReplicaID = -1
			lt := kmsg.NewListOffsetsRequestTopic()
			lt.Topic = topic
			for _, ts := range []int64{-2, -1} {
				p := kmsg.NewListOffsetsRequestTopicPartition()
				p.Partition, p.Timestamp = 0, ts
				lt.Partitions = append(lt.Partitions, p)
			}
			r.Topics = []kmsg.ListOffsetsRequestTopic{lt}
			req = r
		}
		resp, err := br.Request(ctx, req)
		require.NoError(t, err)
		switch r := resp.(type) {
		case *kmsg.MetadataResponse:
			for i := range r.Topics {
				r.Topics[i].Topic, r.Topics[i].TopicID = nil, [16]byte{}
			}
			return asJSON(t, r.Topics)
		case *kmsg.DescribeGroupsResponse:
			for i := range r.Groups {
				r.Groups[i].Group = ""
			}
			return asJSON(t, r.Groups)
		case *kmsg.OffsetFetchResponse:
			for i := range r.Groups {
				r.Groups[i].Group = ""
				for j := range r.Groups[i].Topics {
					r.Groups[i].Topics[j].Topic = ""
				}
			}
			return asJSON(t, r.Groups)
		case *kmsg.ListOffsetsResponse:
			for i := range r.Topics {
				r.Topics[i].Topic = ""
			}
			return asJSON(t, r.Topics)
		}
		t.Fatalf("%s: answer %T", kind, resp)
		return ""
	}
	sep := equeue.NamespaceSeparator
	names := [][2][2]string{ // {topic, group} that b has, then that nobody has
		{{"orders", "kg"}, {"zzabsent", "x8q"}},
		{{"b" + sep + "orders", "b" + sep + "kg"}, {"b" + sep + "zzabsent", "b" + sep + "x8q"}},
		{{equeue.RetryTopic("b" + sep + "kg"), "kg"}, {equeue.RetryTopic("b" + sep + "x8q"), "x8q"}},
	}
	for _, kind := range []string{"Metadata", "DescribeGroups", "OffsetFetch", "ListOffsets"} {
		for _, n := range names {
			have := answer(kind, n[0][0], n[0][1])
			assert.Equal(t, have, answer(kind, n[1][0], n[1][1]), "%s of %v and of %v: the answer tells what b has", kind, n[0], n[1])
			assert.NotContains(t, have, "secret-b")
		}
	}

	md, err := kadmin(t, addr).Metadata(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{"mine"}, md.Topics.Names(), "Metadata of every topic lists a's only")
	lresp, err := br.Request(ctx, kmsg.NewPtrListGroupsRequest())
	require.NoError(t, err)
	assert.Empty(t, lresp.(*kmsg.ListGroupsResponse).Groups, "ListGroups shows none of b's groups")
}

// asJSON is v as JSON: what pointers point to, not their addresses.
func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}
