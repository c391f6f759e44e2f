package remote_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestPullMany_APutOffMessageIsDeliveredInACallOfItsOwn: a client's group
// member long-polls share one PullMany call. When one of them has a
// message that fits the client's limit alone but not behind the other
// pulls' empty answers, the broker answers the call at once with nothing
// for anyone (it puts that pull off for want of room). The client asked
// the same call again at once, and the broker answered it again at once:
// a tight loop of calls until the other pulls' waits ended, with the
// message never delivered meanwhile (in process it is, at once). The
// broker now tells which pulls it put off, and the client asks each of
// them in a call of its own.
func TestPullMany_APutOffMessageIsDeliveredInACallOfItsOwn(t *testing.T) {
	const idle = 20
	ctx := ctxT(t)
	// The engine's cap lies far past the test: no wait ends by it.
	e := openEngine(t, &equeue.Options{MaxPullWait: 10 * time.Minute})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	require.NoError(t, e.CreateTopic(ctx, "s", 1))
	large := &equeue.Message{Body: bytes.Repeat([]byte("L"), 100<<10)}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "s", Messages: []*equeue.Message{large}})
	require.NoError(t, err)
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 2)
	epochs := map[int]int64{}
	for _, g := range a.Queues {
		epochs[g.Queue] = g.Epoch
	}

	// Counts the PullMany calls the broker receives, and the most pulls
	// one of them carried. Not the pulls of the latest to arrive: a call
	// the client cancelled (to ask again with a pull more) may reach the
	// interceptor after the one that replaced it.
	var calls, pulls atomic.Int64
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if in, ok := req.(*pb.PullManyRequest); ok {
			calls.Add(1)
			for n := int64(len(in.GetPulls())); ; {
				most := pulls.Load()
				if n <= most || pulls.CompareAndSwap(most, n) {
					break
				}
			}
		}
		return h(ctx, req)
	}))
	srv.Register(gs)
	addr := serveOwn(t, srv, gs)

	// The client's limit is the least with which the message (as read
	// from topic "s") fits a call of its own.
	raw := rawClient(t, addr)
	least := leastLimitAlone(t, raw, &pb.PullRequest{Topic: "s", Max: 32, StoredBatchVersion: equeue.StoredBatchVersion})
	c := dial(t, addr, &remote.ClientOptions{MaxMessageBytes: least})

	// The idle pulls of queue 0 wait a minute, and behind them the pull
	// of queue 1, in one call.
	pollCtx, stopPolls := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { stopPolls(); wg.Wait() })
	member := func(queue int) *equeue.PullRequest {
		return &equeue.PullRequest{Topic: "t", Queue: queue, Max: 32, Wait: time.Minute, Group: "g", Member: "m", Epoch: epochs[queue]}
	}
	for range idle {
		// A bound of their own keeps them from reading ahead, where
		// pulls of one queue share a fetch: each waits in the call.
		req := member(0)
		req.MaxBytes = 1 << 20
		wg.Go(func() { _, _ = c.Pull(pollCtx, req) })
	}
	eventually(t, 10*time.Second, func() bool { return pulls.Load() == idle }, "the idle pulls never shared a call: at most %v pulls in one of %v calls", func() any { return pulls.Load() }, func() any { return calls.Load() })
	// Its context ends far before the pulls' waits: the message must
	// come before.
	pctx, cancel := context.WithTimeout(pollCtx, 10*time.Second)
	defer cancel()
	type outcome struct {
		res equeue.PullResult
		err error
	}
	got := make(chan outcome, 1)
	wg.Go(func() {
		res, err := c.Pull(pctx, member(1))
		got <- outcome{res, err}
	})
	eventually(t, 10*time.Second, func() bool { return pulls.Load() == idle+1 }, "the pull of queue 1 never joined the call")

	before := calls.Load()
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{large}})
	require.NoError(t, err)
	out := <-got
	made := calls.Load() - before
	require.NoError(t, out.err, "the message that fits the client's limit was not delivered (%d PullMany calls)", made)
	assert.Equal(t, equeue.PullFound, out.res.Status)
	assert.Len(t, out.res.Messages, 1)
	assert.LessOrEqual(t, made, int64(idle+1), "PullMany calls made to deliver one message")

	// The case is the one meant: the message fits the client's limit
	// alone, not behind the idle pulls' answers.
	ps := make([]*pb.PullRequest, 0, idle+1)
	for range idle {
		ps = append(ps, &pb.PullRequest{Topic: "t", Queue: 0, Max: 32, StoredBatchVersion: equeue.StoredBatchVersion})
	}
	ps = append(ps, &pb.PullRequest{Topic: "t", Queue: 1, Max: 32, StoredBatchVersion: equeue.StoredBatchVersion})
	var header metadata.MD
	resp, err := raw.PullMany(ctx, &pb.PullManyRequest{Pulls: ps, MaxAnswerBytes: int32(least)}, grpc.Header(&header))
	require.NoError(t, err)
	require.Len(t, resp.GetItems(), idle+1)
	assert.Equal(t, pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, resp.GetItems()[idle].GetResponse().GetStatus())
	assert.Equal(t, []string{fmt.Sprint(idle)}, header.Get("equeue-pull-later"), "the broker tells which pull it put off")
	assert.Equal(t, pb.PullStatus_PULL_STATUS_FOUND, pullManyWithin(t, raw, least, ps[idle]).GetItems()[0].GetResponse().GetStatus())
}
