package remote

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// holdingBroker reads stream appends and answers none of them, signalling
// got once it has read one.
type holdingBroker struct {
	pb.UnimplementedBrokerServer
	got chan struct{}
}

func (b *holdingBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	once := false
	for {
		if _, err := st.Recv(); err != nil {
			return err
		}
		if !once {
			once = true
			close(b.got)
		}
	}
}

// storingBroker answers every stream append stored, counting them.
type storingBroker struct {
	pb.UnimplementedBrokerServer
	stored atomic.Int64
}

func (b *storingBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	for {
		in, err := st.Recv()
		if err != nil {
			return err
		}
		out := &pb.AppendStreamResponse{}
		for _, a := range in.GetAppends() {
			n := b.stored.Add(1)
			out.Results = append(out.Results, &pb.StreamAppendResult{Seq: a.GetSeq(), Response: &pb.AppendResponse{Ids: []string{"id-" + strconv.FormatInt(n, 10)}}})
		}
		if err := st.Send(out); err != nil {
			return err
		}
	}
}

// serveFake serves b on a loopback port until the test ends; stop stops
// it earlier.
func serveFake(t *testing.T, b pb.BrokerServer) (addr string, stop func()) {
	gs := grpc.NewServer()
	pb.RegisterBrokerServer(gs, b)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	var stopped atomic.Bool
	stop = func() {
		if stopped.CompareAndSwap(false, true) {
			gs.Stop()
			<-served
		}
	}
	t.Cleanup(stop)
	return lis.Addr().String(), stop
}

// When the leader's append stream broke because its connection failed,
// the append in flight got ErrIndeterminate and the cluster client kept
// the dead node for the leader: the next append first failed to open a
// stream there (ErrUnavailable) before the client moved on. A stream that
// breaks so now makes the client forget that leader, as ErrUnavailable
// does, while the broken append stays ErrIndeterminate; the next append
// goes to the other node and is stored.
func TestClusterClient_BrokenLeaderStreamForgetsTheLeader(t *testing.T) {
	old := &holdingBroker{got: make(chan struct{})}
	oldAddr, stopOld := serveFake(t, old)
	next := &storingBroker{}
	nextAddr, _ := serveFake(t, next)

	// The node that stays is first in the list: once the leader is
	// forgotten, the next call goes there.
	cc, err := DialCluster([]string{nextAddr, oldAddr}, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, cc.Close()) }()
	cc.redirect(oldAddr, oldAddr) // the leader is known: appends go on its stream

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}}
	errs := make(chan error, 1)
	cc.AppendAsync(ctx, req, func(_ equeue.AppendResult, err error) { errs <- err })
	<-old.got
	stopOld() // the connection fails with the append in flight
	err = <-errs
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "the append may be stored: %v", err)
	assert.Empty(t, cc.Leader(), "a node whose stream broke with its connection is no longer taken for the leader")

	type answer struct {
		res equeue.AppendResult
		err error
	}
	answers := make(chan answer, 1)
	cc.AppendAsync(ctx, req, func(res equeue.AppendResult, err error) { answers <- answer{res, err} })
	a := <-answers
	require.NoError(t, a.err, "the next append goes to the other node, without a failure on the old one first")
	assert.Equal(t, []string{"id-1"}, a.res.IDs)
	assert.Equal(t, int64(1), next.stored.Load())
}
