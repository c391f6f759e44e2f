package remote_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// rawConn is a plain gRPC connection for requests the Client would never send.
func rawConn(t *testing.T, addr string) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

func TestServer_MalformedRequestsAreInvalidArgument(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{MaxMessageSize: 4096})
	s := startServer(t, e, "", &remote.ServerOptions{MaxMessageBytes: 64 << 10})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	api := pb.NewBrokerClient(rawConn(t, s.addr))
	msg := []*pb.Message{{Body: []byte("x")}}

	cases := map[string]func() error{
		"append no messages": func() error { _, err := api.Append(ctx, &pb.AppendRequest{Topic: "t"}); return err },
		"append nil request": func() error { _, err := api.Append(ctx, nil); return err },
		"append negative queue": func() error {
			_, err := api.Append(ctx, &pb.AppendRequest{Topic: "t", Queue: -1, Messages: msg})
			return err
		},
		"append unknown sync": func() error {
			_, err := api.Append(ctx, &pb.AppendRequest{Topic: "t", Messages: msg, Sync: 42})
			return err
		},
		"append message over engine limit": func() error {
			_, err := api.Append(ctx, &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: make([]byte, 8192)}}})
			return err
		},
		"append invalid delay": func() error {
			_, err := api.Append(ctx, &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Delay: &durationpb.Duration{Seconds: -1, Nanos: 5}}}})
			return err
		},
		"pull negative max": func() error { _, err := api.Pull(ctx, &pb.PullRequest{Topic: "t", Max: -5}); return err },
		"pull huge max":     func() error { _, err := api.Pull(ctx, &pb.PullRequest{Topic: "t", Max: 1 << 30}); return err },
		"pull negative wait": func() error {
			_, err := api.Pull(ctx, &pb.PullRequest{Topic: "t", Wait: durationpb.New(-time.Second)})
			return err
		},
		"pull invalid wait": func() error {
			_, err := api.Pull(ctx, &pb.PullRequest{Topic: "t", Wait: &durationpb.Duration{Seconds: 1, Nanos: -5}})
			return err
		},
		"join no subscriptions": func() error { _, err := api.JoinGroup(ctx, &pb.JoinGroupRequest{Group: "g", Member: "m"}); return err },
		"join unknown model": func() error {
			_, err := api.JoinGroup(ctx, &pb.JoinGroupRequest{Group: "g", Member: "m", Model: 9,
				Subscriptions: []*pb.Subscription{{Topic: "t"}}})
			return err
		},
		"join empty member": func() error {
			_, err := api.JoinGroup(ctx, &pb.JoinGroupRequest{Group: "g", Subscriptions: []*pb.Subscription{{Topic: "t"}}})
			return err
		},
		"heartbeat negative wait": func() error {
			_, err := api.Heartbeat(ctx, &pb.HeartbeatRequest{Group: "g", Member: "m", Wait: durationpb.New(-time.Second)})
			return err
		},
		"commit nil grant": func() error {
			_, err := api.CommitOffsets(ctx, &pb.CommitOffsetsRequest{Group: "g", Member: "m", Offsets: []*pb.OffsetCommit{{Offset: 1}}})
			return err
		},
		"create negative queues": func() error {
			_, err := api.CreateTopic(ctx, &pb.CreateTopicRequest{Name: "u", Queues: -3})
			return err
		},
		"create empty name": func() error { _, err := api.CreateTopic(ctx, &pb.CreateTopicRequest{}); return err },
		"add zero queues":   func() error { _, err := api.AddQueues(ctx, &pb.AddQueuesRequest{Name: "t"}); return err },
		"reset unknown target": func() error {
			_, err := api.ResetOffsets(ctx, &pb.ResetOffsetsRequest{Group: "g", To: 17})
			return err
		},
		"reset duplicate queue": func() error {
			_, err := api.ResetOffsets(ctx, &pb.ResetOffsetsRequest{Group: "g", To: pb.ResetTarget_RESET_TARGET_OFFSETS,
				Offsets: []*pb.QueueOffset{{Topic: "t"}, {Topic: "t"}}})
			return err
		},
	}
	// A group must exist for the reset cases to reach argument checks.
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	for name, call := range cases {
		t.Run(name, func(t *testing.T) {
			err := call()
			require.Error(t, err)
			st := status.Convert(err)
			want := codes.InvalidArgument
			if name == "append negative queue" {
				want = codes.NotFound // as in-process: ErrQueueNotFound
			}
			assert.Equal(t, want, st.Code(), "%v", err)
			assert.NotEmpty(t, st.Details(), "the status names the engine error")
		})
	}
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(0), info.Queues[0].MaxOffset, "nothing was stored")

	// Over gRPC's own size limit: refused before decoding.
	_, err = api.Append(ctx, &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: make([]byte, 128<<10)}}})
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	c := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 16 << 10})
	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, 32<<10)}}})
	assert.ErrorIs(t, err, equeue.ErrMessageTooLarge)
}

func TestServer_HealthAndReflection(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{"secret": remote.RightAll}})
	cc := rawConn(t, s.addr)
	for _, svc := range []string{"", "equeue.v1.Broker"} {
		resp, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err, "health needs no token")
		assert.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
	}
	stream, err := reflectionpb.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.NoError(t, stream.CloseSend())
	var names []string
	for _, svc := range resp.GetListServicesResponse().GetService() {
		names = append(names, svc.GetName())
	}
	assert.Contains(t, names, "equeue.v1.Broker")
	assert.Contains(t, names, "grpc.health.v1.Health")
}

func TestAuth_TokensAndRights(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{
		"admin-tok":   remote.RightAll,
		"produce-tok": remote.RightProduce,
		"consume-tok": remote.RightConsume,
	}})
	none := dial(t, s.addr, nil)
	wrong := dial(t, s.addr, &remote.ClientOptions{Token: "guess"})
	producer := dial(t, s.addr, &remote.ClientOptions{Token: "produce-tok"})
	consumer := dial(t, s.addr, &remote.ClientOptions{Token: "consume-tok"})
	admin := dial(t, s.addr, &remote.ClientOptions{Token: "admin-tok"})
	one := []*equeue.Message{{Body: []byte("x")}}
	stored := func(topic string) int64 {
		info, err := e.Topic(ctx, topic)
		if err != nil {
			return -1
		}
		return info.Queues[0].MaxOffset
	}

	// No token or an unknown one: Unauthenticated, and nothing changes.
	for _, c := range []*remote.Client{none, wrong} {
		err := c.CreateTopic(ctx, "new", 1)
		assert.Equal(t, codes.Unauthenticated, status.Code(err))
		assert.ErrorIs(t, err, remote.ErrUnauthenticated)
		_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: one})
		assert.Equal(t, codes.Unauthenticated, status.Code(err))
		_, err = c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		assert.Equal(t, codes.Unauthenticated, status.Code(err))
	}
	_, err := e.Topic(ctx, "new")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.Equal(t, int64(0), stored("t"))
	_, err = e.Group(ctx, "g")
	assert.ErrorIs(t, err, equeue.ErrGroupNotFound)

	// Known tokens without the call's right: PermissionDenied, nothing changes.
	err = producer.CreateTopic(ctx, "new", 1)
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	assert.ErrorIs(t, err, remote.ErrPermissionDenied)
	_, err = producer.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = consumer.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: one})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	err = consumer.DeleteTopic(ctx, "t")
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = e.Topic(ctx, "new")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.Equal(t, int64(0), stored("t"))

	// With the right, calls go through.
	_, err = producer.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: one})
	require.NoError(t, err)
	res, err := consumer.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	assert.Len(t, res.Messages, 1)
	// Only the engine writes its own topics: consumers send back (SendBack).
	_, err = consumer.Append(ctx, &equeue.AppendRequest{Topic: equeue.DLQTopic("g"), Messages: one})
	assert.Equal(t, codes.PermissionDenied, status.Code(err))
	_, err = admin.Append(ctx, &equeue.AppendRequest{Topic: equeue.DLQTopic("g"), Messages: one})
	assert.ErrorIs(t, err, equeue.ErrInternalTopic)
	_, err = e.Topic(ctx, equeue.DLQTopic("g"))
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	require.NoError(t, admin.CreateTopic(ctx, "new", 1))
	_, err = admin.Append(ctx, &equeue.AppendRequest{Topic: "new", Messages: one})
	require.NoError(t, err)
	assert.Equal(t, int64(1), stored("new"))
}

func TestRights_String(t *testing.T) {
	assert.Equal(t, "none", remote.Rights(0).String())
	assert.Equal(t, "produce|admin", (remote.RightProduce | remote.RightAdmin).String())
	assert.True(t, strings.Contains(remote.RightAll.String(), "consume"))
}

// A pull whose answer limit is below the smallest answer (a hostile or
// misconfigured client) is answered, not a panic turned into Internal.
func TestServer_TinyAnswerLimitAnswersWithoutPanic(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 300 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	api := pb.NewBrokerClient(rawConn(t, s.addr))
	for _, version := range []int32{0, equeue.StoredBatchVersion} {
		resp, err := api.Pull(ctx, &pb.PullRequest{Topic: "t", Offset: 300, MaxAnswerBytes: 1, StoredBatchVersion: version})
		assert.NotEqual(t, codes.Internal, status.Code(err), "version %d: %v", version, err)
		if err == nil {
			assert.Equal(t, pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, resp.GetStatus())
			assert.Empty(t, resp.GetMessages())
		}
		many, err := api.PullMany(ctx, &pb.PullManyRequest{MaxAnswerBytes: 64<<10 + 4,
			Pulls: []*pb.PullRequest{{Topic: "t", Offset: 300, StoredBatchVersion: version}}})
		assert.NotEqual(t, codes.Internal, status.Code(err), "version %d: %v", version, err)
		if err == nil {
			require.Len(t, many.GetItems(), 1)
			assert.Nil(t, many.GetItems()[0].GetError())
		}
	}
}

// Serve returns nil once the server is stopped, also when Stop or
// GracefulStop came first (a signal handled while the program started).
func TestServer_ServeAfterStopReturnsNil(t *testing.T) {
	e := openEngine(t, nil)
	for _, stop := range []func(*remote.Server){(*remote.Server).Stop, (*remote.Server).GracefulStop} {
		srv, err := remote.NewServer(e, nil)
		require.NoError(t, err)
		stop(srv)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		assert.NoError(t, srv.Serve(lis))
	}
}
