package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// documentedRights is the right each Broker RPC needs, as remote.Rights
// and the README describe them: any one of the rights listed allows the
// call. A new RPC must be added here, or TestRights_EveryMethodAnswersAsDocumented
// fails.
var documentedRights = map[string]remote.Rights{
	"Route":            remote.RightProduce,
	"Append":           remote.RightProduce,
	"DeleteReplyTopic": remote.RightProduce, // the requester deletes its reply topic
	// Opening the stream takes either; each append is then checked as Append.
	"AppendStream":     remote.RightProduce | remote.RightConsume,
	"Pull":             remote.RightConsume,
	"PullMany":         remote.RightConsume,
	"JoinGroup":        remote.RightConsume,
	"Heartbeat":        remote.RightConsume,
	"LeaveGroup":       remote.RightConsume,
	"ReleaseQueues":    remote.RightConsume,
	"CommitOffsets":    remote.RightConsume,
	"FetchOffsets":     remote.RightConsume,
	"SendBack":         remote.RightConsume,
	"CreateTopic":      remote.RightAdmin,
	"AddQueues":        remote.RightAdmin,
	"DeleteTopic":      remote.RightAdmin,
	"SetQueueWritable": remote.RightAdmin,
	"SetTopicLimits":   remote.RightAdmin,
	"ListTopics":       remote.RightAdmin,
	"DescribeTopic":    remote.RightAdmin,
	"ListGroups":       remote.RightAdmin,
	"DescribeGroup":    remote.RightAdmin,
	"DeleteGroup":      remote.RightAdmin,
	"ResetOffsets":     remote.RightAdmin,
	"ListDeadLetters":  remote.RightAdmin,
	"Redrive":          remote.RightAdmin,
	"ListDelayed":      remote.RightAdmin,
	"EngineStats":      remote.RightAdmin,
}

// wholeEngineOnly are the methods that answer only a token of the whole
// engine: one scoped to a namespace is refused them (PermissionDenied)
// whatever its rights, as they read what every namespace shares.
var wholeEngineOnly = map[string]bool{"EngineStats": true}

// matrixToken is a token of the rights matrix: its rights, and whether the
// server scopes it to a namespace.
type matrixToken struct {
	name   string
	rights remote.Rights
	scoped bool
}

// matrixTokens are every right alone and the combinations the README
// uses, each also scoped to a namespace: rights hold the same through a
// namespace's view.
var matrixTokens = func() []matrixToken {
	var out []matrixToken
	for _, r := range []remote.Rights{0, remote.RightProduce, remote.RightConsume, remote.RightAdmin,
		remote.RightProduce | remote.RightConsume, remote.RightConsume | remote.RightAdmin, remote.RightAll} {
		out = append(out, matrixToken{name: "tok-" + r.String(), rights: r},
			matrixToken{name: "tok-ns-" + r.String(), rights: r, scoped: true})
	}
	return out
}()

// rightsServer serves e with the matrix tokens (scoped ones to tenant-a).
func rightsServer(t *testing.T, e *equeue.Engine) (*server, *grpc.ClientConn) {
	t.Helper()
	tokens, scoped := map[string]remote.Rights{}, map[string]string{}
	for _, tok := range matrixTokens {
		tokens[tok.name] = tok.rights
		if tok.scoped {
			scoped[tok.name] = "tenant-a"
		}
	}
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: tokens, TokenNamespaces: scoped})
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	return s, conn
}

// rawCall calls method with req, carrying authorization (none when
// empty), and returns the call's error. For AppendStream it sends req as
// the stream's one request and returns the call's error or, when the call
// answered, the error of its first append.
func rawCall(t *testing.T, conn *grpc.ClientConn, authorization string, method protoreflect.MethodDescriptor, req proto.Message) error {
	t.Helper()
	if method.IsStreamingClient() {
		errs, err := streamCall(t, conn, authorization, req.(*pb.AppendStreamRequest))
		if err != nil {
			return err
		}
		return errs[0]
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 5*time.Second)
	defer cancel()
	if authorization != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", authorization)
	}
	out, err := protoregistry.GlobalTypes.FindMessageByName(method.Output().FullName())
	require.NoError(t, err)
	full := fmt.Sprintf("/%s/%s", method.Parent().FullName(), method.Name())
	return conn.Invoke(ctx, full, req, out.New().Interface())
}

// streamCall sends req on one AppendStream call and returns the call's
// error or, when the call answered every append, each append's error by
// its position in req.
func streamCall(t *testing.T, conn *grpc.ClientConn, authorization string, req *pb.AppendStreamRequest) ([]error, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctxT(t), 5*time.Second)
	defer cancel()
	if authorization != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", authorization)
	}
	st, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, pb.Broker_AppendStream_FullMethodName)
	if err != nil {
		return nil, err
	}
	if err := st.SendMsg(req); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	bySeq := map[uint64]error{}
	for {
		resp := new(pb.AppendStreamResponse)
		err := st.RecvMsg(resp)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		for _, r := range resp.GetResults() {
			bySeq[r.GetSeq()] = nil
			if e := r.GetError(); e != nil {
				bySeq[r.GetSeq()] = status.Error(codes.Code(e.GetCode()), e.GetMessage())
			}
		}
	}
	errs := make([]error, len(req.GetAppends()))
	for i, a := range req.GetAppends() {
		err, ok := bySeq[a.GetSeq()]
		require.True(t, ok, "the append stream ended without answering append %d", a.GetSeq())
		errs[i] = err
	}
	return errs, nil
}

// emptyRequest is method's request with nothing set, but for AppendStream:
// one append of one message to topic.
func emptyRequest(t *testing.T, method protoreflect.MethodDescriptor, topic string) proto.Message {
	t.Helper()
	in, err := protoregistry.GlobalTypes.FindMessageByName(method.Input().FullName())
	require.NoError(t, err)
	if method.Name() == "AppendStream" {
		return &pb.AppendStreamRequest{Appends: []*pb.StreamAppend{{Seq: 1, Append: &pb.AppendRequest{Topic: topic, Messages: []*pb.Message{{Body: []byte("x")}}}}}}
	}
	return in.New().Interface()
}

// TestRights_EveryMethodAnswersAsDocumented calls every RPC of the Broker
// service, enumerated from its descriptor, with no token, malformed and
// unknown ones, and a token of each right and combination (each also
// scoped to a namespace), and checks the documented answer: Unauthenticated
// without a known token, PermissionDenied without the call's right, and
// otherwise an answer that is neither. The requests are empty, so an
// allowed call is refused by the engine (or does nothing): rights are
// checked before the request is looked at.
func TestRights_EveryMethodAnswersAsDocumented(t *testing.T) {
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
	ns, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctxT(t), "t", 1))
	_, conn := rightsServer(t, e)
	names := func() []string {
		ts, err := e.Topics(ctxT(t))
		require.NoError(t, err)
		var out []string
		for _, ti := range ts {
			out = append(out, ti.Name)
		}
		return out
	}
	topics := names()

	methods := pb.File_equeue_v1_equeue_proto.Services().ByName("Broker").Methods()
	require.Equal(t, len(pb.Broker_ServiceDesc.Methods)+len(pb.Broker_ServiceDesc.Streams), methods.Len())
	for i := 0; i < methods.Len(); i++ {
		m := methods.Get(i)
		need, ok := documentedRights[string(m.Name())]
		require.True(t, ok, "%s is not in documentedRights: add the right it needs", m.Name())
		for _, auth := range []string{"", "Bearer unknown", "Basic dG9rLWFsbA==", "Bearer ", "tok-all"} {
			err := rawCall(t, conn, auth, m, emptyRequest(t, m, "t"))
			assert.Equal(t, codes.Unauthenticated, status.Code(err), "%s with authorization %q: %v", m.Name(), auth, err)
		}
		for _, tok := range matrixTokens {
			err := rawCall(t, conn, "Bearer "+tok.name, m, emptyRequest(t, m, "t"))
			code, want := status.Code(err), need
			if m.Name() == "AppendStream" && tok.rights&need != 0 {
				// The stream opens; its append to an ordinary topic is Append's.
				want = documentedRights["Append"]
			}
			if tok.rights&want != 0 && !(tok.scoped && wholeEngineOnly[string(m.Name())]) {
				assert.NotContains(t, []codes.Code{codes.PermissionDenied, codes.Unauthenticated}, code,
					"%s by %s (%s) is allowed: %v", m.Name(), tok.name, tok.rights, err)
			} else {
				assert.Equal(t, codes.PermissionDenied, code, "%s by %s (%s) needs %s: %v", m.Name(), tok.name, tok.rights, want, err)
			}
		}
	}
	assert.Equal(t, topics, names(), "no call created or deleted a topic")
	groups, err := e.Groups(ctxT(t))
	require.NoError(t, err)
	assert.Empty(t, groups, "no call created a group")
}

// TestRights_ReplyTopicsWidenJustEnough checks the calls on a reply topic
// against the README: a produce-only token (the requester) creates, reads
// and deletes its reply topic, a consume-only token (a service answering)
// writes to it, by Append and on the append stream, but neither creates
// nor deletes it. A reply topic another token named is read only with the
// consume right and deleted only with the admin right, the rights that
// reach every topic.
func TestRights_ReplyTopicsWidenJustEnough(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s, conn := rightsServer(t, e)
	svc := pb.File_equeue_v1_equeue_proto.Services().ByName("Broker")
	method := func(name string) protoreflect.MethodDescriptor { return svc.Methods().ByName(protoreflect.Name(name)) }
	one := []*pb.Message{{Body: []byte("r")}}
	for _, tok := range matrixTokens {
		if tok.scoped {
			continue
		}
		produce, consume, admin := tok.rights&remote.RightProduce != 0, tok.rights&remote.RightConsume != 0, tok.rights&remote.RightAdmin != 0
		own := dial(t, s.addr, &remote.ClientOptions{Token: tok.name}).NewReplyTopicName()
		others := dial(t, s.addr, &remote.ClientOptions{Token: "tok-ns-" + tok.rights.String()}).NewReplyTopicName()
		for _, reply := range []string{own, others, equeue.ReplyTopicPrefix + "requester-1"} {
			owner := reply == own
			check := func(allowed bool, m string, req proto.Message) {
				t.Helper()
				err := rawCall(t, conn, "Bearer "+tok.name, method(m), req)
				if allowed {
					assert.NotContains(t, []codes.Code{codes.PermissionDenied, codes.Unauthenticated}, status.Code(err), "%s of reply topic %s by %s: %v", m, reply, tok.rights, err)
				} else {
					assert.Equal(t, codes.PermissionDenied, status.Code(err), "%s of reply topic %s by %s: %v", m, reply, tok.rights, err)
				}
			}
			check(produce, "Route", &pb.RouteRequest{Topic: reply})
			_, err := e.Route(ctx, reply) // the topic exists for the calls below
			require.NoError(t, err)
			check(owner && produce || consume, "Pull", &pb.PullRequest{Topic: reply})
			check(produce || consume, "Append", &pb.AppendRequest{Topic: reply, Messages: one})
			check(produce || consume, "AppendStream", emptyRequest(t, method("AppendStream"), reply))
			if produce || consume {
				// On one open stream each append is checked: a consume-only
				// token's append to an ordinary topic after a reply is refused.
				errs, err := streamCall(t, conn, "Bearer "+tok.name, &pb.AppendStreamRequest{Appends: []*pb.StreamAppend{
					{Seq: 1, Append: &pb.AppendRequest{Topic: reply, Messages: one}},
					{Seq: 2, Append: &pb.AppendRequest{Topic: "t", Messages: one}},
				}})
				require.NoError(t, err)
				assert.NoError(t, errs[0], "reply on the stream by %s", tok.rights)
				if produce {
					assert.NoError(t, errs[1], "ordinary append on the stream by %s", tok.rights)
				} else {
					assert.Equal(t, codes.PermissionDenied, status.Code(errs[1]), "ordinary append on the stream by %s: %v", tok.rights, errs[1])
				}
			}
			check(owner && produce || admin, "DeleteReplyTopic", &pb.DeleteReplyTopicRequest{Name: reply})
			if err := e.DeleteReplyTopic(ctx, reply); !errors.Is(err, equeue.ErrTopicNotFound) {
				require.NoError(t, err)
			}
		}
	}
}
