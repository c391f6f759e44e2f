package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// randomRequests fills protobuf requests with hostile values: names of
// topics and groups that exist, internal and invalid names, extreme and
// negative numbers, unknown enum values, durations out of range, and
// repeated fields of a few elements.
type randomRequests struct{ *rand.Rand }

var hostileStrings = []string{"", "t", "t2", "g", "m", "%RETRY%g", "%DLQ%g", "tenant-a.t",
	"a/b", "\x00", "..", strings.Repeat("n", 300), "tag1 || tag2", "é\u4e16", "*"}

var hostileInts = []int64{0, -1, 1, 2, 3, 7, 1 << 20, math.MaxInt32, math.MinInt32,
	math.MaxInt64, math.MinInt64, math.MaxInt64 - 1}

// fill sets most fields of m, and of its messages down to depth 3, to
// hostile values.
func (r randomRequests) fill(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil && r.IntN(2) == 0 {
			continue
		}
		if r.IntN(4) == 0 {
			continue
		}
		switch {
		case fd.IsMap():
			mp := m.Mutable(fd).Map()
			for range r.IntN(3) {
				k := r.scalar(fd.MapKey())
				if fd.MapValue().Kind() == protoreflect.MessageKind {
					v := mp.NewValue()
					if depth < 3 {
						r.fill(v.Message(), depth+1)
					}
					mp.Set(k.MapKey(), v)
				} else {
					mp.Set(k.MapKey(), r.scalar(fd.MapValue()))
				}
			}
		case fd.IsList():
			l := m.Mutable(fd).List()
			for range r.IntN(4) {
				if fd.Kind() == protoreflect.MessageKind || fd.Kind() == protoreflect.GroupKind {
					v := l.NewElement()
					if depth < 3 {
						r.fill(v.Message(), depth+1)
					}
					l.Append(v)
				} else {
					l.Append(r.scalar(fd))
				}
			}
		case fd.Kind() == protoreflect.MessageKind:
			if depth < 3 {
				r.fill(m.Mutable(fd).Message(), depth+1)
			}
		default:
			m.Set(fd, r.scalar(fd))
		}
	}
}

// scalar is a hostile value of fd's kind.
func (r randomRequests) scalar(fd protoreflect.FieldDescriptor) protoreflect.Value {
	n := hostileInts[r.IntN(len(hostileInts))]
	switch fd.Kind() {
	case protoreflect.StringKind:
		return protoreflect.ValueOfString(hostileStrings[r.IntN(len(hostileStrings))])
	case protoreflect.BytesKind:
		b := make([]byte, r.IntN(16))
		for i := range b {
			b[i] = byte(r.IntN(256))
		}
		return protoreflect.ValueOfBytes(b)
	case protoreflect.BoolKind:
		return protoreflect.ValueOfBool(r.IntN(2) == 0)
	case protoreflect.EnumKind:
		return protoreflect.ValueOfEnum(protoreflect.EnumNumber([]int32{0, 1, 2, 3, -1, 99}[r.IntN(6)]))
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return protoreflect.ValueOfInt32(int32(n))
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return protoreflect.ValueOfUint32(uint32(n))
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return protoreflect.ValueOfInt64(n)
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return protoreflect.ValueOfUint64(uint64(n))
	case protoreflect.FloatKind:
		return protoreflect.ValueOfFloat32(float32(n))
	case protoreflect.DoubleKind:
		return protoreflect.ValueOfFloat64(float64(n))
	}
	panic(fmt.Sprintf("no hostile value for %v", fd.Kind()))
}

func allRightsName() string { return remote.RightAll.String() }

// hostileCall calls method with req within two seconds and returns the
// call's error; for AppendStream, the call's error or its first append's.
func hostileCall(t *testing.T, conn *grpc.ClientConn, authorization string, method protoreflect.MethodDescriptor, req proto.Message) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctxT(t), 2*time.Second)
	defer cancel()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", authorization)
	if method.IsStreamingClient() {
		st, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, pb.Broker_AppendStream_FullMethodName)
		if err != nil {
			return err
		}
		if err := st.SendMsg(req); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if err := st.CloseSend(); err != nil {
			return err
		}
		for {
			resp := new(pb.AppendStreamResponse)
			err := st.RecvMsg(resp)
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			for _, res := range resp.GetResults() {
				if e := res.GetError(); e != nil {
					return status.Error(codes.Code(e.GetCode()), e.GetMessage())
				}
			}
		}
	}
	out, err := protoregistry.GlobalTypes.FindMessageByName(method.Output().FullName())
	require.NoError(t, err)
	full := fmt.Sprintf("/%s/%s", method.Parent().FullName(), method.Name())
	return conn.Invoke(ctx, full, req, out.New().Interface())
}

// mutate sets one field of m, chosen at random among its fields and those
// of its messages (set or not), to a hostile value.
func (r randomRequests) mutate(m protoreflect.Message, depth int) {
	fields := m.Descriptor().Fields()
	if fields.Len() == 0 {
		return
	}
	fd := fields.Get(r.IntN(fields.Len()))
	switch {
	case fd.IsMap():
		mp := m.Mutable(fd).Map()
		k := r.scalar(fd.MapKey())
		if fd.MapValue().Kind() == protoreflect.MessageKind {
			v := mp.NewValue()
			r.fill(v.Message(), depth+1)
			mp.Set(k.MapKey(), v)
		} else {
			mp.Set(k.MapKey(), r.scalar(fd.MapValue()))
		}
	case fd.IsList():
		l := m.Mutable(fd).List()
		if fd.Kind() == protoreflect.MessageKind {
			if l.Len() > 0 && r.IntN(4) != 0 {
				r.mutate(l.Get(r.IntN(l.Len())).Message(), depth+1)
				return
			}
			if l.Len() > 0 && r.IntN(2) == 0 {
				// A copy of an element, mutated.
				v := l.NewElement()
				proto.Merge(v.Message().Interface(), l.Get(0).Message().Interface())
				r.mutate(v.Message(), depth+1)
				l.Append(v)
				return
			}
			v := l.NewElement()
			r.fill(v.Message(), depth+1)
			l.Append(v)
			return
		}
		switch r.IntN(3) {
		case 0:
			m.Clear(fd)
		default:
			l.Append(r.scalar(fd))
		}
	case fd.Kind() == protoreflect.MessageKind:
		if r.IntN(6) == 0 {
			m.Clear(fd)
			return
		}
		r.mutate(m.Mutable(fd).Message(), depth+1)
	default:
		m.Set(fd, r.scalar(fd))
	}
}

// TestServer_MutatedValidRequestsAreAnsweredWithDocumentedErrors takes a
// valid request of each RPC of the Broker service (of a joined member,
// with its grants, on a Badger engine with topics, priorities, a dedup
// window, delayed messages and dead letters) and calls it again and again
// with one or two fields changed to a hostile value (a fixed seed, so a
// failure repeats). The server must answer each with a documented error
// or an answer, never crash, hang past the call's deadline or answer
// Internal or Unknown (an error no sentinel names), and it serves on
// afterwards.
func TestServer_MutatedValidRequestsAreAnsweredWithDocumentedErrors(t *testing.T) {
	e, err := equeue.Open(t.TempDir(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	// The rounds took more than ctxT's minute on a loaded machine, and the
	// last check's call then ended with the test's context: the bounds are
	// the test's and each well-formed call's, not the rounds' (a hostile
	// call has its own two seconds).
	ctx := ctxWithin(t, 5*time.Minute)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 2}))
	require.NoError(t, e.CreateTopicWith(ctx, "t2", equeue.TopicOptions{Queues: 1, Priorities: 3, DedupWindow: time.Minute}))
	_, conn := rightsServer(t, e)
	auth := "Bearer tok-" + allRightsName()
	p := newProducer(t, e)
	for i := range 6 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m%d", i), Tag: "a"})
		require.NoError(t, err)
	}
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("later"), Delay: time.Hour})
	require.NoError(t, err)

	call := func(method string, req, resp proto.Message) error {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		cctx = metadata.AppendToOutgoingContext(cctx, "authorization", auth)
		return conn.Invoke(cctx, "/equeue.v1.Broker/"+method, req, resp)
	}
	join := &pb.JoinGroupResponse{}
	require.NoError(t, call("JoinGroup", &pb.JoinGroupRequest{Group: "g", Member: "m", From: pb.ConsumeFrom_CONSUME_FROM_EARLIEST,
		Subscriptions: []*pb.Subscription{{Topic: "t"}, {Topic: "t2", Filter: "a"}}, Incarnation: "i1"}, join))
	a := join.GetAssignment()
	require.NotEmpty(t, a.GetQueues())
	grant := a.GetQueues()[0]
	for _, g := range a.GetQueues() {
		if g.GetTopic() == "t" {
			grant = g
		}
	}
	pulled := &pb.PullResponse{}
	require.NoError(t, call("Pull", &pb.PullRequest{Topic: grant.GetTopic(), Queue: grant.GetQueue(), Group: "g", Member: "m", Epoch: grant.GetEpoch(), Max: 4}, pulled))
	require.NotEmpty(t, pulled.GetMessages())
	first := pulled.GetMessages()[0].GetOffset()
	require.NoError(t, call("SendBack", &pb.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: first, Attempts: 1, DeadLetter: true, Cause: "x"}, &pb.SendBackResponse{}))
	require.NoError(t, call("SendBack", &pb.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: first + 1, Attempts: 1, Cause: "y"}, &pb.SendBackResponse{}))

	msg := func() *pb.Message {
		return &pb.Message{Id: "id1", Tag: "a", Keys: []string{"k"}, Properties: map[string]string{"p": "v"}, Body: []byte("b")}
	}
	bases := map[string]proto.Message{
		"Route":  &pb.RouteRequest{Topic: "t"},
		"Append": &pb.AppendRequest{Topic: "t2", Queue: 0, Messages: []*pb.Message{msg(), msg()}},
		"Pull": &pb.PullRequest{Topic: grant.GetTopic(), Queue: grant.GetQueue(), Offset: first, Max: 3, Filter: "a", Group: "g", Member: "m",
			Epoch: grant.GetEpoch(), MaxAnswerBytes: 1 << 20, StoredBatchVersion: 1, MaxBytes: 1 << 16},
		"JoinGroup": &pb.JoinGroupRequest{Group: "g", Member: "m", From: pb.ConsumeFrom_CONSUME_FROM_EARLIEST,
			Subscriptions: []*pb.Subscription{{Topic: "t"}, {Topic: "t2", Filter: "a"}}, Incarnation: "i1"},
		"Heartbeat":     &pb.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.GetVersion(), Incarnation: "i1"},
		"LeaveGroup":    &pb.LeaveGroupRequest{Group: "g2", Member: "m"},
		"ReleaseQueues": &pb.ReleaseQueuesRequest{Group: "g", Member: "m", Queues: []*pb.Grant{grant}},
		"CommitOffsets": &pb.CommitOffsetsRequest{Group: "g", Member: "m", Offsets: []*pb.OffsetCommit{{Grant: grant, Offset: first + 2,
			Attempts: []*pb.MessageAttempts{{Offset: first + 2, Attempts: 1}, {Offset: first + 3, Done: true}}}}},
		"FetchOffsets": &pb.FetchOffsetsRequest{Group: "g", Member: "m", Queues: a.GetQueues()},
		"SendBack":     &pb.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: first + 2, Attempts: 1, Cause: "z"},
		"PullMany": &pb.PullManyRequest{Pulls: []*pb.PullRequest{
			{Topic: grant.GetTopic(), Queue: grant.GetQueue(), Offset: first, Max: 2, Group: "g", Member: "m", Epoch: grant.GetEpoch(), StoredBatchVersion: 1},
			{Topic: "t", Queue: 1, Max: 2},
		}, MaxAnswerBytes: 1 << 20},
		"CreateTopic":      &pb.CreateTopicRequest{Name: "new", Queues: 2, Priorities: 2, Limits: &pb.TopicLimits{MaxMessages: 10}},
		"AddQueues":        &pb.AddQueuesRequest{Name: "t", Count: 1},
		"DeleteTopic":      &pb.DeleteTopicRequest{Name: "new"},
		"SetQueueWritable": &pb.SetQueueWritableRequest{Name: "t", Queue: 1, Writable: true},
		"ListTopics":       &pb.ListTopicsRequest{},
		"DescribeTopic":    &pb.DescribeTopicRequest{Name: "t2"},
		"ListGroups":       &pb.ListGroupsRequest{},
		"DescribeGroup":    &pb.DescribeGroupRequest{Name: "g"},
		"ResetOffsets": &pb.ResetOffsetsRequest{Group: "g2", To: pb.ResetTarget_RESET_TARGET_OFFSETS,
			Offsets: []*pb.QueueOffset{{Topic: "t", Queue: 0, Offset: 1}}},
		"ListDeadLetters":  &pb.ListDeadLettersRequest{Group: "g", Max: 10, MaxAnswerBytes: 1 << 20},
		"Redrive":          &pb.RedriveRequest{Group: "g", Offsets: []int64{0}},
		"ListDelayed":      &pb.ListDelayedRequest{Max: 10},
		"EngineStats":      &pb.EngineStatsRequest{},
		"DeleteReplyTopic": &pb.DeleteReplyTopicRequest{Name: "%REPLY%x"},
		"DeleteGroup":      &pb.DeleteGroupRequest{Name: "g2"},
		"SetTopicLimits":   &pb.SetTopicLimitsRequest{Name: "t2", Limits: &pb.TopicLimits{MaxMessages: 1000, MaxBytes: 1 << 20}},
		"AppendStream": &pb.AppendStreamRequest{Appends: []*pb.StreamAppend{
			{Seq: 1, Append: &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{msg()}}},
			{Seq: 2, Append: &pb.AppendRequest{Topic: "t2", Messages: []*pb.Message{msg()}}},
		}},
	}

	sd, err := protoregistry.GlobalFiles.FindDescriptorByName("equeue.v1.Broker")
	require.NoError(t, err)
	methods := sd.(protoreflect.ServiceDescriptor).Methods()
	r := randomRequests{rand.New(rand.NewPCG(3, 5))}
	for round := range 100 {
		for i := 0; i < methods.Len(); i++ {
			method := methods.Get(i)
			base, ok := bases[string(method.Name())]
			require.True(t, ok, "no valid request of %s", method.Name())
			req := proto.Clone(base)
			for range 1 + r.IntN(2) {
				r.mutate(req.ProtoReflect(), 0)
			}
			if deletes(req) {
				continue
			}
			a := auth
			if round%4 == 3 {
				a = "Bearer tok-ns-" + allRightsName()
			}
			err := hostileCall(t, conn, a, method, req)
			code := status.Code(err)
			if code == codes.Internal || code == codes.Unknown {
				t.Errorf("round %d: %s answered %v to %v", round, method.Name(), err, req)
			}
		}
	}
	// The server serves on.
	require.NoError(t, call("ListTopics", &pb.ListTopicsRequest{}, &pb.ListTopicsResponse{}))
}

// deletes reports whether req would delete a topic or group the mutated
// requests rely on.
func deletes(req proto.Message) bool {
	kept := map[string]bool{"t": true, "t2": true, "g": true, "%DLQ%g": true, "%RETRY%g": true}
	switch r := req.(type) {
	case *pb.DeleteTopicRequest:
		return kept[r.GetName()]
	case *pb.DeleteGroupRequest:
		return kept[r.GetName()]
	}
	return false
}
