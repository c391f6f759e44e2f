package remote

import (
	"context"
	"fmt"
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

// twoAnswersBroker reads two stream appends and answers them in one
// message: the first stored, the second refused as unavailable (as a
// stopping node answers). Then it holds the call until it ends.
type twoAnswersBroker struct {
	pb.UnimplementedBrokerServer
}

func (twoAnswersBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	var seqs []uint64
	for len(seqs) < 2 {
		in, err := st.Recv()
		if err != nil {
			return err
		}
		for _, a := range in.GetAppends() {
			seqs = append(seqs, a.GetSeq())
		}
	}
	if err := st.Send(&pb.AppendStreamResponse{Results: []*pb.StreamAppendResult{
		{Seq: seqs[0], Response: &pb.AppendResponse{Ids: []string{"id-1"}}},
		{Seq: seqs[1], Error: pullError(fmt.Errorf("%w: node stopping", ErrUnavailable))},
	}}); err != nil {
		return err
	}
	<-st.Context().Done()
	return st.Context().Err()
}

// ClusterClient.Close held the client's lock while it closed each node's
// client, which waits for that client's stream reader; the reader, handing
// an append an answer that makes the cluster client forget the leader
// (unavailable, not leader), waited for that same lock in the callback, so
// Close never returned. Here Close starts while the reader is between the
// two answers of one message (the first append's callback waits for it).
func TestClusterClient_CloseWhileAStreamAnswerRedirects(t *testing.T) {
	gs := grpc.NewServer()
	pb.RegisterBrokerServer(gs, twoAnswersBroker{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	defer func() {
		gs.Stop()
		<-served
	}()
	addr := lis.Addr().String()
	cc, err := DialCluster([]string{addr}, nil)
	require.NoError(t, err)
	cc.redirect(addr, addr) // the leader is known: appends go on its stream

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}}
	firstAnswered := make(chan struct{})
	closing := make(chan struct{})
	errs := make(chan error, 2)
	cc.AppendAsync(ctx, req, func(_ equeue.AppendResult, err error) {
		close(firstAnswered)
		<-closing // Close has begun: it holds what it holds while closing
		errs <- err
	})
	cc.AppendAsync(ctx, req, func(_ equeue.AppendResult, err error) { errs <- err })

	<-firstAnswered
	closed := make(chan error, 1)
	go func() { closed <- cc.Close() }()
	for !cc.closed.Load() {
		time.Sleep(time.Millisecond)
	}
	close(closing)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("ClusterClient.Close did not return: its stream reader waits for the lock Close holds")
	}
	require.NoError(t, <-errs, "the first append was answered stored")
	err = <-errs
	assert.ErrorIs(t, err, ErrUnavailable, "the second append keeps its answer: %v", err)
	assert.Empty(t, cc.Leader(), "an unavailable node is no longer taken for the leader")
}
