package remote_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// A consumer of 16 queues holds one long-poll for all of them (plus its
// heartbeat): with room for only two long-polls on the server it still
// receives from every queue. With one long-poll per queue it could not.
func TestPullMany_OneLongPollForAllQueues(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 16))
	s := startServer(t, e, "", &remote.ServerOptions{MaxLongPolls: 2})
	c := dial(t, s.addr, nil)
	got := newCollector()
	startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Handler: got.handler("c")})
	for q := range 16 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte(fmt.Sprint(q))}}})
		require.NoError(t, err)
	}
	eventually(t, 30*time.Second, func() bool { return got.count() == 16 }, "every queue delivered (%d of 16)", func() any { return got.count() })
	for q := range 16 {
		assert.True(t, got.has(fmt.Sprint(q)), "queue %d", q)
	}
}

// Pulls that share one call keep their own answers: a fenced one fails with
// ErrFenced, a cancelled one with its context's error, the others get
// their messages.
func TestPullMany_PullsKeepTheirOwnOutcome(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 3))
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 3)
	pull := func(ctx context.Context, g equeue.Grant) (equeue.PullResult, error) {
		return c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: g.Queue, Group: "g", Member: "m", Epoch: g.Epoch, Wait: 20 * time.Second})
	}
	type outcome struct {
		res equeue.PullResult
		err error
	}
	var wg sync.WaitGroup
	outs := make([]outcome, 3)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, g := range a.Queues {
		wg.Go(func() {
			pctx := ctx
			switch i {
			case 1:
				g.Epoch += 100 // not this member's grant
			case 2:
				pctx = cctx
			}
			outs[i].res, outs[i].err = pull(pctx, g)
		})
	}
	// The fenced pull answers at once; the cancelled one when cancelled;
	// the first when its queue gets a message.
	eventually(t, 10*time.Second, func() bool {
		st, err := e.Group(ctx, "g")
		return err == nil && len(st.Members) == 1
	}, "member present")
	cancel()
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: a.Queues[0].Queue, Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	wg.Wait()
	require.NoError(t, outs[0].err)
	require.Len(t, outs[0].res.Messages, 1)
	assert.Equal(t, "x", string(outs[0].res.Messages[0].Body))
	assert.ErrorIs(t, outs[1].err, equeue.ErrFenced)
	assert.ErrorIs(t, outs[2].err, context.Canceled)
}

// Closing the client ends its waiting pulls with ErrClosed and leaves no
// goroutine behind (goleak checks at the end of the package).
func TestPullMany_CloseEndsWaitingPulls(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	c, err := remote.Dial(s.addr, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: a.Queues[0].Epoch, Wait: 30 * time.Second})
		done <- err
	}()
	eventually(t, 10*time.Second, func() bool {
		gi, err := e.Group(ctx, "g")
		return err == nil && len(gi.Members) == 1
	}, "joined")
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-done, equeue.ErrClosed)
}

// A message on one queue answers that queue's pull only: the client's
// other pulls, in the same long-poll, keep waiting and get the next
// message of their own queue instead of coming back empty.
func TestPullMany_OneMessageAnswersOnlyItsPull(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 2)
	type outcome struct {
		res equeue.PullResult
		err error
	}
	outs := make([]chan outcome, 2)
	for i, g := range a.Queues {
		outs[i] = make(chan outcome, 1)
		go func() {
			res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: g.Queue, Group: "g", Member: "m", Epoch: g.Epoch, Wait: 30 * time.Second})
			outs[i] <- outcome{res, err}
		}()
	}
	send := func(q int, body string) {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte(body)}}})
		require.NoError(t, err)
	}
	send(a.Queues[0].Queue, "first")
	first := <-outs[0]
	require.NoError(t, first.err)
	require.Len(t, first.res.Messages, 1)
	assert.Equal(t, "first", string(first.res.Messages[0].Body))
	send(a.Queues[1].Queue, "second")
	second := <-outs[1]
	require.NoError(t, second.err)
	require.Equal(t, equeue.PullFound, second.res.Status, "the other pull came back empty")
	assert.Equal(t, "second", string(second.res.Messages[0].Body))
}

// A client whose group members wait on more queues than one PullMany call
// may carry (17 groups of a 256-queue topic: 4,352) still long-polls them
// all: none is refused because the others are too many. Its members never
// heartbeat, and its joins and pulls took more than the default session
// on a loaded machine (g0's member expired): its session is long.
func TestPullMany_MorePullsThanOneCallCarries(t *testing.T) {
	ctx := ctxWithin(t, 5*time.Minute)
	e, c := setup(t, &equeue.Options{SessionTimeout: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "t", equeue.MaxQueuesPerTopic))
	var grants []equeue.Grant
	var groups []string
	for i := range 17 {
		g := fmt.Sprint("g", i)
		a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: g, Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		for _, q := range a.Queues {
			grants = append(grants, q)
			groups = append(groups, g)
		}
	}
	require.Greater(t, len(grants), 4096)
	errs := make([]error, len(grants))
	var wg sync.WaitGroup
	for i, g := range grants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: g.Queue, Group: groups[i], Member: "m", Epoch: g.Epoch,
				Wait: time.Second})
		}()
	}
	wg.Wait()
	failed := 0
	for i, err := range errs {
		if err != nil {
			if failed == 0 {
				t.Errorf("pull of %s %s: %v", groups[i], grants[i].QueueRef, err)
			}
			failed++
		}
	}
	assert.Zero(t, failed, "pulls failed")
}
