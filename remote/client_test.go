package remote_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// fullMessage sets every field a sender may set, system properties included.
func fullMessage(topic string) *equeue.Message {
	born := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	m := &equeue.Message{
		ID: "my-id-1", Topic: topic, Tag: "TagA", Keys: []string{"k1", "k2"},
		Properties: map[string]string{"a": "1", "": "empty key", "ü": "ñ"},
		Body:       []byte{0, 1, 2, 255}, BornAt: born, DeliverAt: born.Add(time.Second),
		ExpiresAt: time.Now().Add(time.Hour), Attempt: 2,
	}
	m.SetSysProperties(map[string]string{equeue.SysReplyTo: "%REPLY%elsewhere", "x": "y"})
	return m
}

func assertSameAsSent(t *testing.T, want, got *equeue.Message) {
	t.Helper()
	assert.Equal(t, want.ID, got.ID)
	assert.Equal(t, want.Topic, got.Topic)
	assert.Equal(t, want.Tag, got.Tag)
	assert.Equal(t, want.Keys, got.Keys)
	assert.Equal(t, want.Properties, got.Properties)
	assert.Equal(t, want.Body, got.Body)
	assert.True(t, want.BornAt.Equal(got.BornAt), "born %v vs %v", want.BornAt, got.BornAt)
	assert.True(t, want.DeliverAt.Equal(got.DeliverAt), "deliver %v vs %v", want.DeliverAt, got.DeliverAt)
	assert.True(t, want.ExpiresAt.Equal(got.ExpiresAt), "expires %v vs %v", want.ExpiresAt, got.ExpiresAt)
	assert.Equal(t, want.Attempt, got.Attempt)
	assert.Equal(t, want.SysProperties(), got.SysProperties())
}

func TestClient_MessageRoundTrip(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, c.CreateTopic(ctx, "t", 2))

	// Client -> engine.
	in := fullMessage("t")
	ar, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{in, {Topic: "t"}}})
	require.NoError(t, err)
	assert.Equal(t, 1, ar.Queue)
	assert.Equal(t, int64(0), ar.FirstOffset)
	require.Len(t, ar.IDs, 2)
	assert.Equal(t, "my-id-1", ar.IDs[0])
	assert.NotEmpty(t, ar.IDs[1])
	fromEngine, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 1})
	require.NoError(t, err)
	require.Len(t, fromEngine.Messages, 2)
	got := fromEngine.Messages[0]
	assertSameAsSent(t, in, got)
	assert.Equal(t, 1, got.Queue)
	assert.Equal(t, int64(0), got.Offset)
	assert.True(t, ar.StoredAt.Equal(got.StoredAt))
	empty := fromEngine.Messages[1]
	assert.Nil(t, empty.Body)
	assert.Nil(t, empty.Properties)
	assert.Nil(t, empty.SysProperties())
	assert.False(t, empty.BornAt.IsZero(), "born-at set by the engine")

	// The same records read through the client are identical, field by field.
	fromClient, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 1})
	require.NoError(t, err)
	assert.Equal(t, fromEngine, fromClient)

	// Engine -> client.
	in2 := fullMessage("t")
	in2.ID = "my-id-2"
	ar2, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{in2}})
	require.NoError(t, err)
	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullFound, res.Status)
	assert.Equal(t, int64(1), res.NextOffset)
	assert.Equal(t, int64(1), res.MaxOffset)
	require.Len(t, res.Messages, 1)
	assertSameAsSent(t, in2, res.Messages[0])
	assert.True(t, ar2.StoredAt.Equal(res.Messages[0].StoredAt))
	want, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0})
	require.NoError(t, err)
	assert.Equal(t, want, res)

	// Statuses other than found cross too.
	res, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 1})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullNoNewMessage, res.Status)
	res, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 7})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullOffsetMoved, res.Status)
	assert.Equal(t, int64(1), res.NextOffset)
	res, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Filter: "Other"})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullNoMatch, res.Status)
	assert.Equal(t, int64(1), res.NextOffset)
}

func TestClient_DeadLetterSysPropertiesCrossTheWire(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, c.CreateTopic(ctx, "t", 1))
	ok := newCollector()
	cons := startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, RetryTopicDelays: []time.Duration{20 * time.Millisecond}, MaxAttempts: 2,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if string(m.Body) == "poison" {
				return errors.New("cannot digest")
			}
			return ok.handler("c")(ctx, m)
		}})
	p := newProducer(t, c)
	for _, b := range []string{"a", "poison", "b"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(b), Properties: map[string]string{"p": b}})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool {
		info, err := c.Topic(ctx, equeue.DLQTopic("g"))
		return err == nil && info.Queues[0].MaxOffset == 1
	}, "poison dead-lettered")
	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: equeue.DLQTopic("g")})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	m := res.Messages[0]
	assert.Equal(t, "poison", string(m.Body))
	assert.Equal(t, "poison", m.Properties["p"])
	assert.Equal(t, 2, m.Attempt)
	assert.Equal(t, "t", m.SysProperty(equeue.SysOriginTopic))
	assert.Equal(t, "0", m.SysProperty(equeue.SysOriginQueue))
	assert.Equal(t, "1", m.SysProperty(equeue.SysOriginOffset))
	assert.Contains(t, m.SysProperty(equeue.SysLastError), "cannot digest")
	direct, err := e.Pull(ctx, &equeue.PullRequest{Topic: equeue.DLQTopic("g")})
	require.NoError(t, err)
	assert.Equal(t, direct.Messages[0].SysProperties(), m.SysProperties())

	// The dead-letter admin calls work remotely too, the deprecated
	// positional form included.
	dls, err := c.DeadLetters(ctx, "g", 0, 0)
	require.NoError(t, err)
	want, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	assert.Equal(t, want, dls)
	require.Len(t, dls, 1)
	assert.Equal(t, "t", dls[0].Message.Topic)
	assert.Contains(t, dls[0].LastError, "cannot digest")
	// Stop the consumer first: it would fail the redriven message again and
	// dead-letter it a second time while the listings below are checked.
	require.NoError(t, cons.Close())
	n, err := c.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	dls, err = c.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	assert.True(t, dls[0].Redriven)
	// ListDeadLetters, the named form, answers the same; past the last
	// dead letter it answers nothing.
	listed, err := c.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 1})
	require.NoError(t, err)
	assert.Equal(t, dls, listed)
	listed, err = c.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: 1})
	require.NoError(t, err)
	assert.Empty(t, listed)
	_, err = c.Redrive(ctx, "g", equeue.RedriveRequest{})
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
}

func TestClient_DelayAndTTLUseTheBrokerClock(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, c.CreateTopic(ctx, "t", 1))
	before := time.Now()
	ar, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("later"), Delay: 300 * time.Millisecond, TTL: time.Hour}}})
	require.NoError(t, err)
	assert.True(t, ar.Delayed)
	assert.Equal(t, int64(-1), ar.FirstOffset)
	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	assert.Empty(t, res.Messages, "not visible before its time")
	res, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Wait: 10 * time.Second})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	m := res.Messages[0]
	assert.GreaterOrEqual(t, time.Since(before), 300*time.Millisecond)
	assert.False(t, m.DeliverAt.Before(before.Add(300*time.Millisecond)))
	assert.WithinDuration(t, before.Add(time.Hour), m.ExpiresAt, 10*time.Second)
	assert.Zero(t, m.Delay, "delay and TTL are not stored")

	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Delay: -time.Second}}})
	assert.ErrorIs(t, err, equeue.ErrInvalidDelay)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Queues[0].MaxOffset)
}

// interceptedServer serves e through Server.Register on a gRPC server of
// the test's own, whose interceptor reports each call's method on entered
// once the call has passed authentication and the in-flight limit.
func interceptedServer(t *testing.T, e *equeue.Engine, opts *remote.ServerOptions) (*remote.Server, *grpc.Server, string, <-chan string) {
	srv, err := remote.NewServer(e, opts)
	require.NoError(t, err)
	entered := make(chan string, 16)
	gs := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		select {
		case entered <- info.FullMethod:
		default:
		}
		return h(ctx, req)
	}))
	srv.Register(gs)
	return srv, gs, serveOwn(t, srv, gs), entered
}

func waitEntered(t *testing.T, entered <-chan string, method string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case m := <-entered:
			if m == method {
				return
			}
		case <-timeout:
			t.Fatalf("%s never reached the server", method)
		}
	}
}

func TestClient_LongPollWokenByAppend(t *testing.T) {
	// The long-poll waits far longer than the test would: one not woken
	// by the append fails the select below rather than end late.
	const wait = 10 * time.Minute
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{MaxPullWait: wait})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, _, addr, entered := interceptedServer(t, e, nil)
	c := dial(t, addr, nil)

	type outcome struct {
		res equeue.PullResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Wait: wait})
		done <- outcome{res, err}
	}()
	waitEntered(t, entered, pb.Broker_Pull_FullMethodName)
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("wake")}}})
	require.NoError(t, err)
	select {
	case o := <-done:
		require.NoError(t, o.err)
		assert.Equal(t, equeue.PullFound, o.res.Status)
		require.Len(t, o.res.Messages, 1)
		assert.Equal(t, "wake", string(o.res.Messages[0].Body))
	case <-time.After(15 * time.Second):
		t.Fatal("long-poll not woken by the append")
	}

	// A long-poll with nothing to find ends after its wait.
	start := time.Now()
	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 1, Wait: 150 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullNoNewMessage, res.Status)
	assert.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
}

func TestClient_LongPollsEndWhenServerStops(t *testing.T) {
	// The long-poll waits far longer than the test would, and the stop has
	// no grace period that would cut it short: a stop that waited it out
	// would fail the select below rather than take long.
	const wait = 10 * time.Minute
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{MaxPullWait: wait})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, gs, addr, entered := interceptedServer(t, e, &remote.ServerOptions{GracefulStopTimeout: -1})
	c := dial(t, addr, nil)
	done := make(chan error, 1)
	go func() {
		_, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Wait: wait})
		done <- err
	}()
	waitEntered(t, entered, pb.Broker_Pull_FullMethodName)
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		srv.GracefulStop() // ends the long-poll at once...
		gs.GracefulStop()  // ...so this need not wait it out
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the graceful stop waited for the long-poll")
	}
	select {
	case err := <-done:
		assert.ErrorIs(t, err, remote.ErrUnavailable)
		assert.NotErrorIs(t, err, equeue.ErrClosed)
	case <-time.After(10 * time.Second):
		t.Fatal("the long-poll did not end")
	}
}

func TestClient_Admin(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, c.CreateTopic(ctx, "t", 2))
	require.NoError(t, c.AddQueues(ctx, "t", 1))
	require.NoError(t, c.SetQueueWritable(ctx, "t", 2, false))
	r, err := c.Route(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, equeue.Route{Topic: "t", Queues: 3, Writable: []int{0, 1}}, r)

	ti, err := c.Topic(ctx, "t")
	require.NoError(t, err)
	want, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, want.Name, ti.Name)
	assert.True(t, want.CreatedAt.Equal(ti.CreatedAt))
	assert.Equal(t, want.Queues, ti.Queues)
	ts, err := c.Topics(ctx)
	require.NoError(t, err)
	require.Len(t, ts, 1)
	assert.Equal(t, "t", ts[0].Name)

	col := newCollector()
	startConsumer(t, c, equeue.ConsumerOptions{Group: "g", ID: "m1", Subscriptions: []equeue.Subscription{{Topic: "t", Filter: "A || B"}},
		From: equeue.ConsumeFromEarliest, Handler: col.handler("m1")})
	p := newProducer(t, c)
	for i := 0; i < 4; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Tag: "A", Body: []byte{byte(i)}})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool { return col.count() == 4 }, "consumed")
	eventually(t, 10*time.Second, func() bool {
		g, err := c.Group(ctx, "g")
		require.NoError(t, err)
		var committed int64
		for _, q := range g.Queues {
			committed += max(q.Committed, 0)
		}
		return committed == 4
	}, "committed")
	gi, err := c.Group(ctx, "g")
	require.NoError(t, err)
	wantG, err := e.Group(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, wantG, gi)
	assert.Contains(t, gi.Subscriptions, equeue.Subscription{Topic: "t", Filter: "A || B"})
	gs, err := c.Groups(ctx)
	require.NoError(t, err)
	assert.Equal(t, []equeue.GroupInfo{wantG}, gs)

	require.NoError(t, c.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets,
		Offsets: map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 0}}))
	eventually(t, 10*time.Second, func() bool { return col.count() > 4 }, "reset to 0 redelivers queue 0")

	require.NoError(t, c.DeleteTopic(ctx, "t"))
	_, err = e.Topic(ctx, "t")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
}
