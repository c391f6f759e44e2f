package remote_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// deadLetterBodies stores a dead letter of group g for each body, in order
// (an orderly in-process consumer that gives up on every message).
func deadLetterBodies(t *testing.T, e *equeue.Engine, g string, bodies [][]byte) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
	for _, b := range bodies {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "jobs", Messages: []*equeue.Message{{Body: b}}})
		require.NoError(t, err)
	}
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: g, Subscriptions: []equeue.Subscription{{Topic: "jobs"}}, Orderly: true,
		Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("poison")) }})
	eventually(t, 20*time.Second, func() bool {
		info, err := e.Topic(ctx, equeue.DLQTopic(g))
		return err == nil && info.Queues[0].MaxOffset == int64(len(bodies))
	}, "%d messages dead-lettered", len(bodies))
	require.NoError(t, c.Close())
}

// A page of dead letters larger than the client accepts used to fail the
// call (gRPC refused the answer): the broker now stops the page where the
// client's MaxMessageBytes would be passed, so paging on by the last
// entry's offset lists them all.
func TestDeadLetters_PageFitsTheClientsLimit(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	const n = 8
	bodies := make([][]byte, n)
	for i := range bodies {
		bodies[i] = bytes.Repeat([]byte{byte('a' + i)}, 300<<10)
	}
	deadLetterBodies(t, e, "g", bodies)
	small := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 1 << 20})

	var got []int // the dead letters' body sizes and first bytes, as listed
	pages := 0
	for from := int64(0); ; pages++ {
		page, err := small.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: from, Max: n})
		require.NoError(t, err, "page from %d", from)
		if len(page) == 0 {
			break
		}
		assert.Less(t, len(page), n, "a whole page of %d would pass the client's 1 MiB", n)
		for _, dl := range page {
			assert.Equal(t, from, dl.Offset, "pages follow one another without a gap")
			assert.Equal(t, "jobs", dl.Message.Topic)
			assert.Contains(t, dl.LastError, "poison")
			got = append(got, len(dl.Message.Body), int(dl.Message.Body[0]))
			from = dl.Offset + 1
		}
	}
	var want []int
	for _, b := range bodies {
		want = append(want, len(b), int(b[0]))
	}
	assert.Equal(t, want, got, "every dead letter listed once, in order")
	assert.Greater(t, pages, 2)

	// A client with room for all of them gets the whole page, as in-process.
	all, err := dial(t, s.addr, nil).ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: n})
	require.NoError(t, err)
	direct, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: n})
	require.NoError(t, err)
	require.Len(t, all, n)
	assert.True(t, assert.ObjectsAreEqual(direct, all), "the remote page equals the in-process one")
}

// One dead letter larger than the client accepts is a clear
// ErrMessageTooLarge naming it, so the caller can list past it.
func TestDeadLetters_OneLargerThanTheClientAccepts(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	deadLetterBodies(t, e, "g", [][]byte{[]byte("small"), make([]byte, 2<<20), []byte("after")})
	small := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 1 << 20})

	page, err := small.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, page, 1, "the page stops before the large one")
	assert.Equal(t, "small", string(page[0].Message.Body))

	_, err = small.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: 1})
	require.ErrorIs(t, err, equeue.ErrMessageTooLarge)
	var big *equeue.MessageTooLargeError
	require.ErrorAs(t, err, &big)
	assert.Equal(t, equeue.QueueRef{Topic: equeue.DLQTopic("g"), Queue: 0}, big.QueueRef)
	assert.Equal(t, int64(1), big.Offset)
	assert.Equal(t, 1<<20, big.Limit)

	page, err = small.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: 2})
	require.NoError(t, err)
	require.Len(t, page, 1)
	assert.Equal(t, "after", string(page[0].Message.Body))
}

// A client that does not say its limit (an older version) gets pages within
// the server's MaxMessageBytes, as its pulls do.
func TestDeadLetters_OlderClientGetsTheServersLimit(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", &remote.ServerOptions{MaxMessageBytes: 1 << 20})
	bodies := make([][]byte, 4)
	for i := range bodies {
		bodies[i] = make([]byte, 400<<10)
	}
	deadLetterBodies(t, e, "g", bodies)
	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(1<<20)))
	require.NoError(t, err)
	defer func() { require.NoError(t, conn.Close()) }()
	resp, err := pb.NewBrokerClient(conn).ListDeadLetters(ctx, &pb.ListDeadLettersRequest{Group: "g", Max: 4})
	require.NoError(t, err)
	assert.Len(t, resp.GetDeadLetters(), 2, "two of 400 KiB fit 1 MiB, a third does not")
	_, err = pb.NewBrokerClient(conn).ListDeadLetters(ctx, &pb.ListDeadLettersRequest{Group: "g", MaxAnswerBytes: -1})
	assert.ErrorIs(t, remote.FromStatus(err), equeue.ErrInvalidArgument)
}
