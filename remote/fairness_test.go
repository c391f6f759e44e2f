package remote_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// holdLongPolls makes n waiting pulls on api, each on a goroutine of its
// own, until ctx ends, and returns the refusals' errors as they come. The
// pulls end with ctx.
func holdLongPolls(t *testing.T, ctx context.Context, api pb.BrokerClient, n int) <-chan error {
	t.Helper()
	refused := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, err := api.Pull(ctx, &pb.PullRequest{Topic: "hog", Wait: durationpb.New(time.Hour)})
			if ctx.Err() == nil {
				refused <- remote.FromStatus(err)
			}
		})
	}
	t.Cleanup(wg.Wait)
	return refused
}

// One connection (a client that leaks pulls, or a hostile one) could take
// every place of MaxLongPolls, and every other client's long-polls were
// then refused as busy until it let go: their consumers received nothing.
// By default a connection holds at most half of MaxLongPolls; one more is
// refused at once as busy, and another connection's long-polls go on.
func TestFairness_HogConnectionLeavesLongPollsToOthers(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{MaxPullWait: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "hog", 1))
	const limit = 8
	s := startServer(t, e, "", &remote.ServerOptions{MaxLongPolls: limit})
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	refused := holdLongPolls(t, hctx, rawBroker(t, s.addr), limit)
	var errs []error
	eventually(t, 30*time.Second, func() bool {
		for len(refused) > 0 {
			errs = append(errs, <-refused)
		}
		// (A pull counts itself in before its connection's share refuses
		// it: the refusals are waited for, not only the sum.)
		return len(errs) == limit/2 && remote.HeldLongPolls(s.srv) == limit/2
	}, "every pull of the hog is held or refused")
	assert.Equal(t, int64(limit/2), remote.HeldLongPolls(s.srv), "the hog holds half of MaxLongPolls")
	require.Len(t, errs, limit/2)
	for _, err := range errs {
		require.ErrorIs(t, err, remote.ErrBusy)
		assert.ErrorContains(t, err, "this connection")
	}

	// Another connection long-polls all the same: a raw pull (which
	// would see a refusal) and a consumer of its own group.
	res, err := rawBroker(t, s.addr).Pull(ctx, &pb.PullRequest{Topic: "t", Wait: durationpb.New(10 * time.Millisecond)})
	require.NoError(t, err, "a second connection's long-poll is refused while the hog holds its share")
	assert.Equal(t, pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE, res.GetStatus())
	c := dial(t, s.addr, nil)
	got := newCollector()
	startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Handler: got.handler("c")})
	_, err = newProducer(t, c).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("m")})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() bool { return got.has("m") }, "the second client's consumer received nothing")
	assert.Empty(t, refused, "the hog's held pulls still wait")
	assert.GreaterOrEqual(t, remote.HeldLongPolls(s.srv), int64(limit/2))
}

// One connection could take every place of MaxAppendStreams, and every
// other client then sent with unary calls. By default a connection holds
// at most half of MaxAppendStreams; another client gets a stream.
func TestFairness_HogConnectionLeavesAppendStreamsToOthers(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const limit = 8
	srv, addr, unary := serveCountingAppends(t, e, limit)
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	opened, err := openStreams(t, hctx, rawBroker(t, addr), limit)
	assert.Equal(t, limit/2, opened, "the hog holds half of MaxAppendStreams")
	require.ErrorIs(t, err, remote.ErrBusy)
	assert.ErrorContains(t, err, "this connection")

	p := newProducer(t, dial(t, addr, nil))
	for i := range 3 {
		_, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i)}).Result(ctx)
		require.NoError(t, err)
	}
	assert.Zero(t, unary.Load(), "the second client sent with unary calls: it got no stream")
	assert.Equal(t, int64(limit/2+1), remote.HeldAppendStreams(srv))
}

// MaxLongPollsPerConn and MaxAppendStreamsPerConn set a connection's share;
// one of the server-wide bound or more lets a connection take it all, and
// a negative one is refused.
func TestFairness_PerConnOptions(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{MaxPullWait: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "hog", 1))
	for _, tc := range []struct {
		name                 string
		longPolls, streams   int
		wantPolls, wantCalls int
	}{
		{"set", 2, 1, 2, 1},
		{"whole bound", 8, 8, 8, 8},
		{"above the bound", 100, 100, 8, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, e, "", &remote.ServerOptions{MaxLongPolls: 8, MaxAppendStreams: 8,
				MaxLongPollsPerConn: tc.longPolls, MaxAppendStreamsPerConn: tc.streams})
			hctx, hcancel := context.WithCancel(ctx)
			defer hcancel()
			hog := rawBroker(t, s.addr)
			refused := holdLongPolls(t, hctx, hog, 8)
			// A pull counts itself in before its connection's share
			// refuses it: held and refused add up to 8 for a moment with
			// one pull counted twice, so the refusals are waited for.
			eventually(t, 30*time.Second, func() bool {
				return len(refused) == 8-tc.wantPolls && remote.HeldLongPolls(s.srv) == int64(tc.wantPolls)
			}, "every pull of the hog is held or refused")
			opened, _ := openStreams(t, hctx, hog, 8)
			assert.Equal(t, tc.wantCalls, opened)
			hcancel()
			s.stop()
		})
	}
	for _, o := range []remote.ServerOptions{{MaxLongPollsPerConn: -1}, {MaxAppendStreamsPerConn: -1}, {MaxStreamAppendsPerConn: -1}, {MaxInFlightPerConn: -1}} {
		_, err := remote.NewServer(e, &o)
		assert.ErrorIs(t, err, equeue.ErrInvalidOptions, "%+v", o)
	}
}

// 200 consumers on one client, each of its own group, hold a long-poll
// each for their heartbeats and one for their pulls while a hog
// connection holds its whole share of MaxLongPolls, and a producer on
// another client with a single unary slot sends to them: every group
// receives every message.
//
// Every consumer's unary calls (its join, its fetch of offsets, its first
// pulls) go through that one slot, which under -race on a loaded machine
// took over a minute for the 200: the test holds no bound on that time
// (its calls share a context of minutes, and the consumers start
// together). What it checks is what the hog may hold, and that every
// group sees every message: with the connection share undone, the hog
// holds every long-poll and none is refused, and the consumers, whose
// long-polls are then refused as busy, receive nothing.
func TestFairness_ManyConsumersBesideAHog(t *testing.T) {
	t.Parallel() // its calls wait on each other's backoffs, not on this process
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	e := openEngine(t, &equeue.Options{MaxPullWait: time.Hour})
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	require.NoError(t, e.CreateTopic(ctx, "hog", 1))
	const consumers, limit = 200, 512
	s := startServer(t, e, "", &remote.ServerOptions{MaxLongPolls: limit, MaxInFlight: 1})
	hctx, hcancel := context.WithCancel(ctx)
	defer hcancel()
	refused := holdLongPolls(t, hctx, rawBroker(t, s.addr), limit)
	eventually(t, 2*time.Minute, func() bool {
		return len(refused) == limit/2 && remote.HeldLongPolls(s.srv) == limit/2
	}, "every pull of the hog is held or refused (the refusals waited for: a pull counts itself in before its share refuses it): %d refused, %d held",
		func() any { return len(refused) }, func() any { return remote.HeldLongPolls(s.srv) })
	for range limit / 2 {
		require.ErrorIs(t, <-refused, remote.ErrBusy, "a pull of the hog past its share")
	}

	c := dial(t, s.addr, nil)
	got := newCollector()
	groups := make([]string, consumers)
	started := make(chan error, consumers)
	for i := range consumers {
		groups[i] = fmt.Sprint("g", i)
		cons, err := equeue.NewConsumer(c, equeue.ConsumerOptions{Group: groups[i], Subscriptions: []equeue.Subscription{{Topic: "t"}},
			From: equeue.ConsumeFromEarliest, Handler: got.handler(groups[i]), HeartbeatInterval: time.Second, PullWait: 5 * time.Second,
			CommitInterval: time.Hour})
		require.NoError(t, err)
		t.Cleanup(func() { _ = cons.Close() })
		go func() { started <- cons.Start(ctx) }()
	}
	for range consumers {
		require.NoError(t, <-started)
	}
	p := newProducer(t, dial(t, s.addr, nil))
	const messages = 4
	bodies := make([]string, messages)
	for i := range messages {
		bodies[i] = fmt.Sprintf("m%d", i)
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(bodies[i])})
		require.NoError(t, err)
	}
	// Each body handled by every group (a group may handle one twice, as
	// at-least-once delivery allows).
	everyGroup := func() map[string][]string {
		out := map[string][]string{}
		for _, b := range bodies {
			out[b] = groups
		}
		return out
	}()
	distinct := func() map[string][]string {
		out := map[string][]string{}
		for body, by := range got.snapshot() {
			by = slices.Clone(by)
			slices.Sort(by)
			by = slices.Compact(by)
			slices.SortFunc(by, func(a, b string) int { return cmp.Compare(groupIndex(a), groupIndex(b)) })
			out[body] = by
		}
		return out
	}
	eventually(t, 5*time.Minute, func() bool { return reflect.DeepEqual(distinct(), everyGroup) },
		"not every group received every message: %d deliveries of %d", func() any { return got.count() }, consumers*messages)
	assert.Equal(t, everyGroup, distinct())
}

// groupIndex is the number of a group named "g<number>".
func groupIndex(name string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(name, "g"))
	return n
}

// A client's append stream may have up to MaxInFlight appends unanswered,
// and each held a slot of MaxInFlight while the store wrote it: with a slow
// store one producer held every slot, and every other client's calls
// (sends, heartbeats, routes...) were refused as busy meanwhile. By
// default one connection's stream appends hold at most half of
// MaxInFlight; the rest wait in the stream's window, and other clients'
// calls find room.
func TestFairness_HogStreamLeavesInFlightToOthers(t *testing.T) {
	ctx := ctxT(t)
	gs, e := gatedEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.CreateTopic(ctx, "hog", 1))
	const limit = 8
	s := startServer(t, e, "", &remote.ServerOptions{MaxInFlight: limit})
	hog := newProducer(t, dial(t, s.addr, nil))
	_, err := hog.SendAsync(ctx, &equeue.Message{Topic: "hog", Body: []byte("warm")}).Result(ctx)
	require.NoError(t, err, "the hog's stream is open and knows its window")

	gs.hold()
	t.Cleanup(gs.release) // before the clients close, should a check fail
	const n = 4 * limit
	futs := make([]*equeue.SendFuture, n)
	for i := range futs {
		futs[i] = hog.SendAsync(ctx, &equeue.Message{Topic: "hog", Body: fmt.Appendf(nil, "%d", i)})
	}
	// The hog takes what it may: every slot, or its share with the next
	// append waiting (and the reader with it: the rest wait in the stream).
	eventually(t, 30*time.Second, func() bool {
		return gs.waiting.Load() > 0 && (remote.InFlight(s.srv) == limit || remote.WaitingStreamAppends(s.srv) > 0)
	}, "the hog's appends never waited for the store")
	assert.Equal(t, int64(limit/2), remote.InFlight(s.srv), "the hog holds half of MaxInFlight")

	// Another client's calls are not refused as busy.
	other := rawBroker(t, s.addr)
	_, err = other.Route(ctx, &pb.RouteRequest{Topic: "t"})
	require.NoError(t, remote.FromStatus(err), "a route is refused while the hog's appends wait for the store")
	_, err = other.ListTopics(ctx, &pb.ListTopicsRequest{})
	require.NoError(t, remote.FromStatus(err))
	sent := make(chan error, 1)
	go func() {
		_, err := other.Append(ctx, &pb.AppendRequest{Topic: "t", Messages: []*pb.Message{{Body: []byte("m")}}})
		sent <- remote.FromStatus(err)
	}()
	beat := make(chan error, 1)
	go func() {
		_, err := other.JoinGroup(ctx, &pb.JoinGroupRequest{Group: "g", Member: "m", Subscriptions: []*pb.Subscription{{Topic: "t"}}})
		if err == nil {
			_, err = other.Heartbeat(ctx, &pb.HeartbeatRequest{Group: "g", Member: "m"})
		}
		beat <- remote.FromStatus(err)
	}()
	// Both calls hold a slot (their writes wait for the store too) or are done.
	eventually(t, 30*time.Second, func() bool {
		return remote.InFlight(s.srv) >= limit/2+2 || len(sent)+len(beat) > 0
	}, "the other client's calls never ran")
	gs.release()
	require.NoError(t, <-sent, "a send is refused while the hog's appends wait for the store")
	require.NoError(t, <-beat, "a join or heartbeat is refused while the hog's appends wait for the store")
	for i, f := range futs {
		_, err := f.Result(ctx)
		require.NoError(t, err, "hog send %d", i)
	}
	assert.Len(t, storedBodies(t, e, "hog"), n+1)
	assert.Zero(t, remote.InFlight(s.srv))
}

// One connection issuing many unary calls at once (sends, commits, admin
// calls...) could take every slot of MaxInFlight, and every other client's
// calls were refused as busy until its calls ended. By default a
// connection's unary calls hold at most half of MaxInFlight; one more is
// refused at once as busy, naming the connection's bound, and another
// connection's calls go on. MaxInFlightPerConn sets the share; MaxInFlight
// or more lets one connection take every slot.
func TestFairness_HogConnectionLeavesUnaryInFlightToOthers(t *testing.T) {
	const limit = 8
	for _, tc := range []struct {
		name    string
		perConn int
		want    int
	}{
		{"default", 0, limit / 2},
		{"set", 3, 3},
		{"whole bound", limit, limit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			gs, e := gatedEngine(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			require.NoError(t, e.CreateTopic(ctx, "hog", 1))
			s := startServer(t, e, "", &remote.ServerOptions{MaxInFlight: limit, MaxInFlightPerConn: tc.perConn})
			gs.hold()
			t.Cleanup(gs.release) // before the server stops, should a check fail
			hog := rawBroker(t, s.addr)
			held := make(chan error, limit)
			refused := make(chan error, limit)
			for i := range limit {
				go func() {
					_, err := hog.Append(ctx, &pb.AppendRequest{Topic: "hog", Messages: []*pb.Message{{Body: fmt.Appendf(nil, "%d", i)}}})
					if err = remote.FromStatus(err); errors.Is(err, remote.ErrBusy) {
						refused <- err
						return
					}
					held <- err
				}()
			}
			// (A call counts itself in before its connection's share
			// refuses it: the refusals are waited for, not only the sum.)
			eventually(t, 30*time.Second, func() bool {
				return len(refused) == limit-tc.want && remote.InFlight(s.srv) == int64(tc.want)
			}, "the hog's unary calls never settled at %d held and %d refused", tc.want, limit-tc.want)
			for range limit - tc.want {
				assert.ErrorContains(t, <-refused, "this connection")
			}

			other := rawBroker(t, s.addr)
			if tc.want < limit {
				_, err := other.Route(ctx, &pb.RouteRequest{Topic: "t"})
				require.NoError(t, remote.FromStatus(err), "a route is refused while the hog's calls wait for the store")
				_, err = other.ListTopics(ctx, &pb.ListTopicsRequest{})
				require.NoError(t, remote.FromStatus(err))
			} else {
				_, err := other.Route(ctx, &pb.RouteRequest{Topic: "t"})
				require.ErrorIs(t, remote.FromStatus(err), remote.ErrBusy, "the hog may take every slot")
			}
			gs.release()
			for range tc.want {
				require.NoError(t, <-held)
			}
			assert.Len(t, storedBodies(t, e, "hog"), tc.want)
			assert.Zero(t, remote.InFlight(s.srv))
		})
	}
}
