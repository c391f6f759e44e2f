package kafka_test

import (
	"context"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// Kafka's authorization error codes, as the README names them.
const (
	topicAuthFailed   int16 = 29 // TOPIC_AUTHORIZATION_FAILED
	groupAuthFailed   int16 = 30 // GROUP_AUTHORIZATION_FAILED
	clusterAuthFailed int16 = 31 // CLUSTER_AUTHORIZATION_FAILED
)

// kafkaGroups is what the matrix test sets up before any refused call: a
// classic group "live" with one member, a KIP-848 group "cg" with one
// member, and offsets committed for a group "kg" that has no member.
type kafkaGroups struct {
	liveMember string
	liveGen    int32
	cgMember   string
}

// kafkaRightsRow is one served API key: the rights any one of which it
// needs, as the README and kafka.Rights document them, a request that
// would change (or read) the engine or the listener's groups were it
// allowed, the error code a refusal answers it with, and what else the
// refused answer must hold back (nil: nothing but the error codes).
type kafkaRightsRow struct {
	need    kafka.Rights
	request func(g kafkaGroups) kmsg.Request
	code    int16
	empty   func(t *testing.T, resp kmsg.Response)
}

// kafkaRightsRows has a row for every API key the listener serves. A key
// served without a row fails TestRights_EveryKafkaAPIRefusedWithoutItsRight.
var kafkaRightsRows = map[int16]kafkaRightsRow{
	// Before authentication: no right needed.
	kmsg.ApiVersions.Int16():      {},
	kmsg.SASLHandshake.Int16():    {},
	kmsg.SASLAuthenticate.Int16(): {},

	kmsg.Produce.Int16(): {need: kafka.RightProduce, code: topicAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrProduceRequest()
		req.Acks, req.TimeoutMillis = -1, 10_000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewProduceRequestTopicPartition()
		rp.Records = rawBatch(-1, -1, -1, "forged")
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		for _, rt := range resp.(*kmsg.ProduceResponse).Topics {
			for _, rp := range rt.Partitions {
				assert.Equal(t, int64(-1), rp.BaseOffset, "Produce: no base offset")
			}
		}
	}},
	kmsg.Fetch.Int16(): {need: kafka.RightConsume, code: topicAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrFetchRequest()
		req.MaxBytes, req.ReplicaID = 1<<20, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes, rp.LogStartOffset = 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		for _, rt := range resp.(*kmsg.FetchResponse).Topics {
			for _, rp := range rt.Partitions {
				assert.Empty(t, rp.RecordBatches, "Fetch: no records")
				assert.Zero(t, rp.HighWatermark, "Fetch: no high watermark")
			}
		}
	}},
	kmsg.ListOffsets.Int16(): {need: kafka.RightAll, code: topicAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		for _, rt := range resp.(*kmsg.ListOffsetsResponse).Topics {
			for _, rp := range rt.Partitions {
				assert.Equal(t, int64(-1), rp.Offset, "ListOffsets: no offset")
			}
		}
	}},
	kmsg.Metadata.Int16(): {need: kafka.RightAll, code: topicAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrMetadataRequest()
		req.AllowAutoTopicCreation = true
		for _, name := range []string{"t", "auto-created"} {
			mt := kmsg.NewMetadataRequestTopic()
			mt.Topic = kmsg.StringPtr(name)
			req.Topics = append(req.Topics, mt)
		}
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		md := resp.(*kmsg.MetadataResponse)
		assert.Empty(t, md.Brokers, "Metadata: no broker")
		for _, mt := range md.Topics {
			assert.Empty(t, mt.Partitions, "Metadata: no partition")
		}
	}},
	kmsg.OffsetCommit.Int16(): {need: kafka.RightConsume, code: groupAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation = "kg", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Offset = 3
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		return req
	}},
	kmsg.OffsetFetch.Int16(): {need: kafka.RightConsume, code: groupAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "kg" // v0-7; v8 names its groups below
		g := kmsg.NewOffsetFetchRequestGroup()
		g.Group = "kg"
		req.Groups = append(req.Groups, g)
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		of := resp.(*kmsg.OffsetFetchResponse)
		assert.Empty(t, of.Topics, "OffsetFetch: no offset")
		for _, g := range of.Groups {
			assert.Empty(t, g.Topics, "OffsetFetch: no offset")
		}
	}},
	kmsg.FindCoordinator.Int16(): {need: kafka.RightAll, code: groupAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorKey, req.CoordinatorKeys = "kg", []string{"kg"} // v0-3, v4
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		fc := resp.(*kmsg.FindCoordinatorResponse)
		if fc.GetVersion() < 4 {
			assert.Equal(t, int32(-1), fc.NodeID, "FindCoordinator: no node")
		}
		for _, c := range fc.Coordinators {
			assert.Equal(t, int32(-1), c.NodeID, "FindCoordinator: no node")
		}
	}},
	kmsg.JoinGroup.Int16(): {need: kafka.RightConsume, code: groupAuthFailed, request: func(kafkaGroups) kmsg.Request {
		return liveJoin("")
	}, empty: func(t *testing.T, resp kmsg.Response) {
		assert.Empty(t, resp.(*kmsg.JoinGroupResponse).Members, "JoinGroup: no member")
	}},
	kmsg.Heartbeat.Int16(): {need: kafka.RightConsume, code: groupAuthFailed, request: func(g kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.MemberID, req.Generation = "live", g.liveMember, g.liveGen
		return req
	}},
	kmsg.LeaveGroup.Int16(): {need: kafka.RightConsume, code: groupAuthFailed, request: func(g kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Group, req.MemberID = "live", g.liveMember // v0-2
		m := kmsg.NewLeaveGroupRequestMember()
		m.MemberID = g.liveMember // v3+
		req.Members = append(req.Members, m)
		return req
	}},
	kmsg.SyncGroup.Int16(): {need: kafka.RightConsume, code: groupAuthFailed, request: func(g kafkaGroups) kmsg.Request {
		return liveSync(g.liveMember, g.liveGen)
	}, empty: func(t *testing.T, resp kmsg.Response) {
		assert.Empty(t, resp.(*kmsg.SyncGroupResponse).MemberAssignment, "SyncGroup: no assignment")
	}},
	kmsg.DescribeGroups.Int16(): {need: kafka.RightAdmin, code: groupAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"live", "kg"}
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		for _, g := range resp.(*kmsg.DescribeGroupsResponse).Groups {
			assert.Empty(t, g.Members, "DescribeGroups: no member")
		}
	}},
	kmsg.ListGroups.Int16(): {need: kafka.RightAdmin, code: clusterAuthFailed, request: func(kafkaGroups) kmsg.Request {
		return kmsg.NewPtrListGroupsRequest()
	}, empty: func(t *testing.T, resp kmsg.Response) {
		assert.Empty(t, resp.(*kmsg.ListGroupsResponse).Groups, "ListGroups: no group")
	}},
	kmsg.CreateTopics.Int16(): {need: kafka.RightAdmin, code: topicAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = 10_000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "created", 1, 1
		req.Topics = append(req.Topics, rt)
		return req
	}},
	kmsg.DeleteTopics.Int16(): {need: kafka.RightAdmin, code: topicAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis, req.TopicNames = 10_000, []string{"t"}
		return req
	}},
	kmsg.InitProducerID.Int16(): {need: kafka.RightProduce, code: clusterAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.ProducerID, req.ProducerEpoch = -1, -1
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		assert.Equal(t, int64(-1), resp.(*kmsg.InitProducerIDResponse).ProducerID, "InitProducerId: no producer ID")
	}},
	kmsg.DescribeConfigs.Int16(): {need: kafka.RightAdmin, code: clusterAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrDescribeConfigsRequest()
		r := kmsg.NewDescribeConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		req.Resources = append(req.Resources, r)
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		for _, r := range resp.(*kmsg.DescribeConfigsResponse).Resources {
			assert.Empty(t, r.Configs, "DescribeConfigs: no config")
		}
	}},
	kmsg.CreatePartitions.Int16(): {need: kafka.RightAdmin, code: topicAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.TimeoutMillis = 10_000
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "t", 4
		req.Topics = append(req.Topics, rt)
		return req
	}},
	kmsg.ConsumerGroupHeartbeat.Int16(): {need: kafka.RightConsume, code: groupAuthFailed, request: func(g kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "cg", g.cgMember, -1 // a leave
		req.RebalanceTimeoutMillis = -1
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		assert.Nil(t, resp.(*kmsg.ConsumerGroupHeartbeatResponse).Assignment, "ConsumerGroupHeartbeat: no assignment")
	}},
	kmsg.ConsumerGroupDescribe.Int16(): {need: kafka.RightAdmin, code: groupAuthFailed, request: func(kafkaGroups) kmsg.Request {
		req := kmsg.NewPtrConsumerGroupDescribeRequest()
		req.Groups = []string{"cg"}
		return req
	}, empty: func(t *testing.T, resp kmsg.Response) {
		for _, g := range resp.(*kmsg.ConsumerGroupDescribeResponse).Groups {
			assert.Empty(t, g.Members, "ConsumerGroupDescribe: no member")
		}
	}},
}

// liveJoin is a JoinGroup of the classic group "live" by member (empty:
// a new member), with sessions long enough that no member expires while
// the test runs.
func liveJoin(member string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group, req.MemberID, req.ProtocolType = "live", member, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(time.Hour/time.Millisecond), 60_000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: (&kmsg.ConsumerMemberMetadata{Topics: []string{"t"}}).AppendTo(nil)}}
	return req
}

// liveSync is the SyncGroup of the leader of "live" giving itself t's
// partitions.
func liveSync(member string, gen int32) *kmsg.SyncGroupRequest {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.MemberID, req.Generation = "live", member, gen
	req.ProtocolType, req.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	a := kmsg.NewSyncGroupRequestGroupAssignment()
	a.MemberID = member
	a.MemberAssignment = (&kmsg.ConsumerMemberAssignment{Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: []int32{0, 1}}}}).AppendTo(nil)
	req.GroupAssignment = append(req.GroupAssignment, a)
	return req
}

// errorCodes returns the error codes of resp's answer: those of each item
// it answers (partition, group, topic, coordinator) when it answers items,
// else its own. A response's own ErrorCode is 0 beside items that carry
// theirs (Fetch v7+), or not on the wire at all at the version spoken
// (OffsetFetch v8, FindCoordinator v4, Metadata below v13).
func errorCodes(resp kmsg.Response) []int16 {
	var top, items []int16
	var walk func(v reflect.Value, depth int)
	walk = func(v reflect.Value, depth int) {
		switch v.Kind() {
		case reflect.Pointer:
			if !v.IsNil() {
				walk(v.Elem(), depth)
			}
		case reflect.Slice:
			for i := range v.Len() {
				walk(v.Index(i), depth+1)
			}
		case reflect.Struct:
			for i := range v.NumField() {
				f := v.Type().Field(i)
				switch {
				case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16 && depth == 0:
					top = append(top, int16(v.Field(i).Int()))
				case f.Name == "ErrorCode" && f.Type.Kind() == reflect.Int16:
					items = append(items, int16(v.Field(i).Int()))
				case f.IsExported():
					walk(v.Field(i), depth)
				}
			}
		}
	}
	walk(reflect.ValueOf(resp), 0)
	if len(items) > 0 {
		return items
	}
	return top
}

// kafkaState is what a refused request must leave as it was: the topics
// (queues, ends, writability), the engine's groups, the offsets of the
// Kafka groups, and the listener's groups with their members.
type kafkaState struct {
	Topics       map[string][]equeue.QueueInfo
	EngineGroups []string
	Offsets      map[string]map[equeue.QueueRef]int64
	Listed       []string
	Members      map[string][]string
	Epochs       map[string]int32
}

func takeKafkaState(ctx context.Context, t *testing.T, e *equeue.Engine, admin *kgo.Broker) kafkaState {
	t.Helper()
	s := kafkaState{Topics: map[string][]equeue.QueueInfo{}, Offsets: map[string]map[equeue.QueueRef]int64{},
		Members: map[string][]string{}, Epochs: map[string]int32{}}
	ts, err := e.Topics(ctx)
	require.NoError(t, err)
	for _, ti := range ts {
		s.Topics[ti.Name] = ti.Queues
	}
	gs, err := e.Groups(ctx)
	require.NoError(t, err)
	for _, g := range gs {
		s.EngineGroups = append(s.EngineGroups, g.Name)
	}
	for _, g := range []string{"kg", "live", "cg"} {
		s.Offsets[g], err = e.GroupOffsets(ctx, g)
		require.NoError(t, err)
	}
	lg, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, lg.ErrorCode)
	for _, g := range lg.Groups {
		s.Listed = append(s.Listed, g.Group+"/"+g.GroupState)
	}
	sort.Strings(s.Listed)
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"live"}
	dgr, err := dg.RequestWith(ctx, admin)
	require.NoError(t, err)
	for _, g := range dgr.Groups {
		require.Zero(t, g.ErrorCode)
		for _, m := range g.Members {
			s.Members[g.Group] = append(s.Members[g.Group], m.MemberID)
		}
	}
	cd := kmsg.NewPtrConsumerGroupDescribeRequest()
	cd.Groups = []string{"cg"}
	cdr, err := cd.RequestWith(ctx, admin)
	require.NoError(t, err)
	for _, g := range cdr.Groups {
		require.Zero(t, g.ErrorCode)
		s.Epochs[g.Group] = g.Epoch
		for _, m := range g.Members {
			s.Members[g.Group] = append(s.Members[g.Group], m.MemberID)
			s.Epochs[g.Group+"/"+m.MemberID] = m.MemberEpoch
		}
	}
	return s
}

// TestRights_EveryKafkaAPIRefusedWithoutItsRight sends every API key the
// Kafka listener serves, enumerated from its own ApiVersions answer so a
// new key without a row fails the test, with a request that would change
// (or read) the engine or the listener's groups, over a connection
// authenticated with each token that lacks the key's right: each is
// answered with the documented authorization error
// (TOPIC_AUTHORIZATION_FAILED, GROUP_AUTHORIZATION_FAILED or
// CLUSTER_AUTHORIZATION_FAILED) in every error code of the answer, shows
// nothing, and leaves the topics, their messages, the groups, their
// members and their offsets as they were. An unknown token (a token of
// another namespace is one to a listener that does not serve it) fails
// SASL authentication for every key.
func TestRights_EveryKafkaAPIRefusedWithoutItsRight(t *testing.T) {
	ctx := testCtx(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	var msgs []*equeue.Message
	for range 5 {
		msgs = append(msgs, &equeue.Message{Body: []byte("kept")})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	rights := []kafka.Rights{0, kafka.RightProduce, kafka.RightConsume, kafka.RightAdmin,
		kafka.RightProduce | kafka.RightConsume, kafka.RightProduce | kafka.RightAdmin, kafka.RightConsume | kafka.RightAdmin, kafka.RightAll}
	tokens := map[string]kafka.Rights{}
	for _, r := range rights {
		tokens[tokenOf(r)] = r
	}
	addr := serve(t, e, &kafka.Options{Tokens: tokens, MaxSessionTimeout: 2 * time.Hour,
		ConsumerSessionTimeout: time.Hour, ConsumerHeartbeatInterval: time.Minute})
	broker := func(token string) *kgo.Broker {
		cl := kclient(t, addr, kgo.SASL(plain.Auth{User: "u", Pass: token}.AsMechanism()), kgo.RequestRetries(0))
		return cl.SeedBrokers()[0]
	}
	admin := broker(tokenOf(kafka.RightAll))

	// The groups a refused request would change.
	var g kafkaGroups
	jr := requestJoin(ctx, t, admin, liveJoin(""))
	require.Zero(t, jr.ErrorCode)
	g.liveMember, g.liveGen = jr.MemberID, jr.Generation
	sr, err := liveSync(g.liveMember, g.liveGen).RequestWith(ctx, admin)
	require.NoError(t, err)
	require.Zero(t, sr.ErrorCode)
	cm := &cgMember{t: t, b: admin, group: "cg", id: "cg-member-0000000001"}
	require.Zero(t, cm.beat(ctx, topicIDOf(ctx, t, admin, "t"), []string{"t"}, false).ErrorCode)
	g.cgMember = cm.id
	commit := kafkaRightsRows[kmsg.OffsetCommit.Int16()].request(g).(*kmsg.OffsetCommitRequest)
	commit.Topics[0].Partitions[0].Offset = 1
	cr, err := admin.Request(ctx, namedCommit{commit}) // by topic name: v9 at most
	require.NoError(t, err)
	require.Equal(t, []int16{0}, errorCodes(cr))
	before := takeKafkaState(ctx, t, e, admin)
	require.Len(t, before.Members["live"], 1)
	require.Len(t, before.Members["cg"], 1)
	require.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 1}, before.Offsets["kg"])

	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, broker(tokenOf(0)))
	require.NoError(t, err)
	require.NotEmpty(t, av.ApiKeys)
	needs := kafka.APIRights()
	require.Len(t, av.ApiKeys, len(needs), "ApiVersions lists every key served")
	brokers := map[kafka.Rights]*kgo.Broker{}
	for _, r := range rights {
		brokers[r] = broker(tokenOf(r))
	}
	unknown := broker("no such token")
	for _, k := range av.ApiKeys {
		name := kmsg.NameForKey(k.ApiKey)
		row, ok := kafkaRightsRows[k.ApiKey]
		require.True(t, ok, "%s (key %d) is served but has no row in kafkaRightsRows: add the right it needs", name, k.ApiKey)
		require.Equal(t, row.need, needs[k.ApiKey], "%s: the listener needs %v, the table documents %v", name, needs[k.ApiKey], row.need)
		if row.need == 0 {
			continue // comes before authentication
		}
		refused := 0
		for _, r := range rights {
			if r&row.need != 0 {
				continue
			}
			refused++
			resp, err := brokers[r].Request(ctx, row.request(g)) // at the highest version both sides serve
			require.NoError(t, err, "%s by a token of rights %b", name, r)
			codes := errorCodes(resp)
			require.NotEmpty(t, codes, "%s by a token of rights %b: an answer without an error code", name, r)
			for _, c := range slices.Compact(slices.Sorted(slices.Values(codes))) {
				assert.Equal(t, row.code, c, "%s by a token of rights %b: %v", name, r, kerr.ErrorForCode(c))
			}
			if row.empty != nil {
				row.empty(t, resp)
			}
		}
		require.NotZero(t, refused, "%s: no token lacks its right", name)
		_, err := unknown.Request(ctx, row.request(g))
		assert.ErrorIs(t, err, kerr.SaslAuthenticationFailed, "%s with an unknown token", name)
		if after := takeKafkaState(ctx, t, e, admin); !assert.Equal(t, before, after, "%s changed the engine or the listener's groups", name) {
			before = after // the next key is judged on its own change
		}
	}
}

// tokenOf is the matrix test's token of rights r.
func tokenOf(r kafka.Rights) string {
	return "token-" + string(rune('0'+r))
}
