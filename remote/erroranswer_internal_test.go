package remote

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// codelessErrorBroker answers every append of its AppendStream, and every
// pull of its PullMany, with an error item whose code is 0 (gRPC's OK):
// a broken or foreign server's answer.
type codelessErrorBroker struct {
	pb.UnimplementedBrokerServer
}

func (codelessErrorBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	for {
		req, err := st.Recv()
		if err != nil {
			return nil
		}
		out := &pb.AppendStreamResponse{}
		for _, a := range req.GetAppends() {
			out.Results = append(out.Results, &pb.StreamAppendResult{Seq: a.GetSeq(), Error: &pb.PullError{Message: "odd"}})
		}
		if err := st.Send(out); err != nil {
			return nil
		}
	}
}

func (codelessErrorBroker) PullMany(_ context.Context, req *pb.PullManyRequest) (*pb.PullManyResponse, error) {
	out := &pb.PullManyResponse{}
	for range req.GetPulls() {
		out.Items = append(out.Items, &pb.PullManyItem{Error: &pb.PullError{Message: "odd"}})
	}
	return out, nil
}

// An error item without a code (0 is gRPC's OK) was decoded as no error at
// all: an append answered so was reported stored, with no IDs (a
// Producer's Send then indexed past them and panicked), and a long-poll
// pull came back found, at offset 0 (a consumer would start the queue
// over). Such an item is an error whose cause is unknown. For an append
// it is of unknown outcome (ErrIndeterminate): a server of an earlier
// version sent one after storing the append, for a backend error whose
// gRPC status said OK (TestServer_StoredAppendFailingWithAnOKStatusIsNeverCodeless);
// before, the client took it for a refusal.
func TestAnswer_ErrorItemWithoutACodeIsAnError(t *testing.T) {
	gs := grpc.NewServer()
	pb.RegisterBrokerServer(gs, codelessErrorBroker{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	defer func() {
		gs.Stop()
		<-served
	}()
	c, err := Dial(lis.Addr().String(), &ClientOptions{PullAhead: -1})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	res, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.Error(t, err, "answered %+v", res)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate, "an answer the client cannot classify: it may be stored")
	done := make(chan error, 1)
	c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("y")}}},
		func(_ equeue.AppendResult, err error) { done <- err })
	err = <-done
	require.Error(t, err)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate, "append async: %v", err)

	pres, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 7, Group: "g", Member: "m", Wait: time.Second})
	require.Error(t, err, "answered %+v", pres)
}

// An append protobuf cannot encode (a tag that is not UTF-8) went into a
// stream batch whose encoding then failed: that ended the stream, and the
// append, which never left the client, was reported unknown, as was every
// other append of its batch and in flight on the stream. It is refused
// before it is sent, and the stream carries the others on.
func TestAppendPipe_UnencodableAppendIsRefusedAlone(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	c, stop := serveInternal(t, e)
	defer stop()

	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("first")}}})
	require.NoError(t, err)
	c.pipe.mu.Lock()
	stream := c.pipe.cur
	c.pipe.mu.Unlock()
	require.NotNil(t, stream, "the first append left no stream")

	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Tag: "\xff", Body: []byte("bad")}}})
	require.Error(t, err)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "never sent: not stored")
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)

	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("next")}}})
	require.NoError(t, err)
	c.pipe.mu.Lock()
	assert.Same(t, stream, c.pipe.cur, "the stream was broken")
	c.pipe.mu.Unlock()
	q, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), q.Queues[0].MaxOffset, "every append but the unencodable one stored")
}
