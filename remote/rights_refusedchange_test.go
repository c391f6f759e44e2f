package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// refusalView is what the refusal test sets up and looks at: the whole
// engine, or the namespace a scoped token is served by.
type refusalView interface {
	equeue.Broker
	CreateTopic(ctx context.Context, name string, queues int) error
	Topics(ctx context.Context) ([]equeue.TopicInfo, error)
	Groups(ctx context.Context) ([]equeue.GroupInfo, error)
	ListDeadLetters(ctx context.Context, group string, req equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error)
}

// refusalFixture is what refusalSetup made in one view: topic t with ten
// messages, group g whose member m holds t's queue under epoch, has
// committed offset 3 and dead-lettered offset 3, and a reply topic named
// by a token of no one's.
type refusalFixture struct {
	epoch int64
	reply string
}

func refusalSetup(t *testing.T, v refusalView, reply string) refusalFixture {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, v.CreateTopic(ctx, "t", 1))
	msgs := make([]*equeue.Message, 10)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: []byte("x")}
	}
	_, err := v.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	a, err := v.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	g := a.Queues[0]
	res, err := v.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: g.Epoch, Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 10)
	require.NoError(t, v.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 3}}}))
	_, err = v.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 3, DeadLetter: true, Cause: "test"})
	require.NoError(t, err)
	_, err = v.Route(ctx, reply)
	require.NoError(t, err)
	return refusalFixture{epoch: g.Epoch, reply: reply}
}

// refusalSnapshot is what a refused call must leave as it was.
type refusalSnapshot struct {
	Topics      []equeue.TopicInfo
	Groups      []equeue.GroupInfo
	DeadLetters []equeue.DLQEntry
}

func takeRefusalSnapshot(t *testing.T, v refusalView) refusalSnapshot {
	t.Helper()
	ctx := ctxT(t)
	var s refusalSnapshot
	var err error
	s.Topics, err = v.Topics(ctx)
	require.NoError(t, err)
	s.Groups, err = v.Groups(ctx)
	require.NoError(t, err)
	s.DeadLetters, err = v.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.NotEmpty(t, s.DeadLetters)
	return s
}

// refusalRows is, for every Broker RPC, a request that would change the
// engine (or read it) were it allowed, and the rights any one of which
// allows that request.
var refusalRows = map[string]func(f refusalFixture) (proto.Message, remote.Rights){
	"Route": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.RouteRequest{Topic: "new"}, remote.RightProduce
	},
	"Append": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("y")}}}, remote.RightProduce
	},
	"AppendStream": func(refusalFixture) (proto.Message, remote.Rights) {
		// Refused when the stream opens (no produce or consume right) or at
		// its append (consume alone reaches reply topics only).
		return &pb.AppendStreamRequest{Appends: []*pb.StreamAppend{{Seq: 1, Append: &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("y")}}}}}}, remote.RightProduce
	},
	"DeleteReplyTopic": func(f refusalFixture) (proto.Message, remote.Rights) {
		return &pb.DeleteReplyTopicRequest{Name: f.reply}, remote.RightAdmin // not the caller's reply topic
	},
	"Pull": func(f refusalFixture) (proto.Message, remote.Rights) {
		return &pb.PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: f.epoch, Offset: 3, Max: 10}, remote.RightConsume
	},
	"PullMany": func(f refusalFixture) (proto.Message, remote.Rights) {
		return &pb.PullManyRequest{Pulls: []*pb.PullRequest{{Topic: "t", Group: "g", Member: "m", Epoch: f.epoch, Offset: 3, Max: 10}}}, remote.RightConsume
	},
	"JoinGroup": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.JoinGroupRequest{Group: "g", Member: "m2", Subscriptions: []*pb.Subscription{{Topic: "t"}}}, remote.RightConsume
	},
	"Heartbeat": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.HeartbeatRequest{Group: "g", Member: "m", Wait: durationpb.New(0)}, remote.RightConsume
	},
	"LeaveGroup": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.LeaveGroupRequest{Group: "g", Member: "m"}, remote.RightConsume
	},
	"ReleaseQueues": func(f refusalFixture) (proto.Message, remote.Rights) {
		return &pb.ReleaseQueuesRequest{Group: "g", Member: "m", Queues: []*pb.Grant{{Topic: "t", Epoch: f.epoch}}}, remote.RightConsume
	},
	"CommitOffsets": func(f refusalFixture) (proto.Message, remote.Rights) {
		return &pb.CommitOffsetsRequest{Group: "g", Member: "m", Offsets: []*pb.OffsetCommit{{Grant: &pb.Grant{Topic: "t", Epoch: f.epoch}, Offset: 8}}}, remote.RightConsume
	},
	"FetchOffsets": func(f refusalFixture) (proto.Message, remote.Rights) {
		return &pb.FetchOffsetsRequest{Group: "g", Member: "m", Queues: []*pb.Grant{{Topic: "t", Epoch: f.epoch}}}, remote.RightConsume
	},
	"SendBack": func(f refusalFixture) (proto.Message, remote.Rights) {
		return &pb.SendBackRequest{Group: "g", Member: "m", Grant: &pb.Grant{Topic: "t", Epoch: f.epoch}, Offset: 5, DeadLetter: true}, remote.RightConsume
	},
	"CreateTopic": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.CreateTopicRequest{Name: "new", Queues: 1}, remote.RightAdmin
	},
	"AddQueues": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.AddQueuesRequest{Name: "t", Count: 1}, remote.RightAdmin
	},
	"DeleteTopic": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.DeleteTopicRequest{Name: "t"}, remote.RightAdmin
	},
	"SetQueueWritable": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.SetQueueWritableRequest{Name: "t", Queue: 0, Writable: false}, remote.RightAdmin
	},
	"SetTopicLimits": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.SetTopicLimitsRequest{Name: "t", Limits: &pb.TopicLimits{MaxMessages: 2}}, remote.RightAdmin
	},
	"ListTopics": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.ListTopicsRequest{}, remote.RightAdmin
	},
	"DescribeTopic": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.DescribeTopicRequest{Name: "t"}, remote.RightAdmin
	},
	"ListGroups": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.ListGroupsRequest{}, remote.RightAdmin
	},
	"DescribeGroup": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.DescribeGroupRequest{Name: "g"}, remote.RightAdmin
	},
	"DeleteGroup": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.DeleteGroupRequest{Name: "g", Force: true}, remote.RightAdmin
	},
	"ResetOffsets": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.ResetOffsetsRequest{Group: "g", To: pb.ResetTarget_RESET_TARGET_LATEST}, remote.RightAdmin
	},
	"ListDeadLetters": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.ListDeadLettersRequest{Group: "g"}, remote.RightAdmin
	},
	"Redrive": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.RedriveRequest{Group: "g", All: true}, remote.RightAdmin
	},
	"ListDelayed": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.ListDelayedRequest{}, remote.RightAdmin
	},
	"EngineStats": func(refusalFixture) (proto.Message, remote.Rights) {
		return &pb.EngineStatsRequest{}, remote.RightAdmin
	},
}

// TestRights_RefusedCallsChangeNothing calls every RPC of the Broker
// service, enumerated from its descriptor, with a request that would
// change (or read) the engine, by every token (scoped to a namespace or
// not) that lacks the right the request needs: each is PermissionDenied,
// and the topics, their messages and limits, the groups, their members
// and offsets, and the dead letters are as they were. A new RPC without a
// row fails the test.
func TestRights_RefusedCallsChangeNothing(t *testing.T) {
	e := openEngine(t, nil)
	ns, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	s, conn := rightsServer(t, e)
	views := map[bool]refusalView{false: e, true: ns}
	fixtures := map[bool]refusalFixture{}
	for scoped, v := range views {
		// A reply topic named by a token of no one's: only admin deletes it.
		other := dial(t, s.addr, &remote.ClientOptions{Token: "nobody"}).NewReplyTopicName()
		fixtures[scoped] = refusalSetup(t, v, other)
	}
	before := map[bool]refusalSnapshot{false: takeRefusalSnapshot(t, e), true: takeRefusalSnapshot(t, ns)}

	methods := pb.File_equeue_v1_equeue_proto.Services().ByName("Broker").Methods()
	require.Equal(t, len(pb.Broker_ServiceDesc.Methods)+len(pb.Broker_ServiceDesc.Streams), methods.Len())
	for i := 0; i < methods.Len(); i++ {
		m := methods.Get(i)
		row, ok := refusalRows[string(m.Name())]
		require.True(t, ok, "%s has no row in refusalRows: add a request and the right it needs", m.Name())
		refused := 0
		for _, tok := range matrixTokens {
			req, need := row(fixtures[tok.scoped])
			if tok.rights&need != 0 {
				continue
			}
			refused++
			err := rawCall(t, conn, "Bearer "+tok.name, m, req)
			assert.Equal(t, codes.PermissionDenied, status.Code(err), "%s by %s (%s) needs %s: %v", m.Name(), tok.name, tok.rights, need, err)
		}
		require.NotZero(t, refused, "%s: no token lacks its right", m.Name())
		for scoped, v := range views {
			assert.Equal(t, before[scoped], takeRefusalSnapshot(t, v), "%s changed the engine (scoped %v)", m.Name(), scoped)
		}
	}
}
