package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// bodies collects handled message bodies.
type bodies struct {
	mu  sync.Mutex
	got map[string]int
}

func (b *bodies) handler(fail string) equeue.Handler {
	return func(_ context.Context, m *equeue.Message) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.got == nil {
			b.got = map[string]int{}
		}
		b.got[string(m.Body)]++
		if m.Topic != "orders" {
			return fmt.Errorf("message of topic %q", m.Topic)
		}
		if string(m.Body) == fail {
			return errors.New("poison")
		}
		return nil
	}
}

func (b *bodies) keys() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for k := range b.got {
		out = append(out, k)
	}
	return out
}

func TestNamespace_SameNamesAreIndependent(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	a, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	b, err := e.Namespace("tenant-b")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopic(ctx, "orders", 2))
	require.NoError(t, b.CreateTopic(ctx, "orders", 3))
	require.NoError(t, e.CreateTopic(ctx, "orders", 1))
	assert.ErrorIs(t, a.CreateTopic(ctx, "orders", 1), equeue.ErrTopicExists)

	send := func(br equeue.Broker, prefix string, n int) {
		p := newProducer(t, br, nil)
		for i := 0; i < n; i++ {
			_, err := p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte(fmt.Sprintf("%s-%d", prefix, i))})
			require.NoError(t, err)
		}
	}
	send(a, "a", 10)
	send(b, "b", 5)
	send(e, "root", 1)

	var ga, gb bodies
	for _, c := range []struct {
		br equeue.Broker
		h  equeue.Handler
	}{{a, ga.handler("a-3")}, {b, gb.handler("")}} {
		cons, err := equeue.NewConsumer(c.br, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "orders"}},
			Handler: c.h, MaxAttempts: 1, CommitInterval: 50 * time.Millisecond, HeartbeatInterval: 200 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, cons.Start(ctx))
		t.Cleanup(func() { _ = cons.Close() })
	}
	eventually(t, 20*time.Second, func() bool { return len(ga.keys()) == 10 && len(gb.keys()) == 5 }, "both groups consume their own topic")
	eventually(t, 20*time.Second, func() bool {
		dls, err := a.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		return err == nil && len(dls) == 1
	}, "the poison message reaches tenant-a's dead letters")
	for _, k := range ga.keys() {
		assert.True(t, strings.HasPrefix(k, "a-"), "tenant-a got %q", k)
	}
	for _, k := range gb.keys() {
		assert.True(t, strings.HasPrefix(k, "b-"), "tenant-b got %q", k)
	}

	dls, err := a.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.Equal(t, "orders", dls[0].Message.Topic, "a dead letter names its topic inside the namespace")
	assert.Equal(t, "a-3", string(dls[0].Message.Body))
	dls, err = b.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	assert.Empty(t, dls)

	names := func(ts []equeue.TopicInfo) []string {
		var out []string
		for _, t := range ts {
			out = append(out, t.Name)
		}
		return out
	}
	ta, err := a.Topics(ctx)
	require.NoError(t, err)
	assert.Contains(t, names(ta), "orders")
	assert.Contains(t, names(ta), "%DLQ%g", "the group's internal topics live in its namespace")
	for _, n := range names(ta) {
		assert.NotContains(t, n, equeue.NamespaceSeparator, "tenant-a sees only its own names")
	}
	tb, err := b.Topics(ctx)
	require.NoError(t, err)
	assert.NotContains(t, names(tb), "%DLQ%g")
	assert.Contains(t, names(tb), "orders")
	root, err := e.Topics(ctx)
	require.NoError(t, err)
	assert.Subset(t, names(root), []string{"orders", "tenant-a:orders", "tenant-b:orders", "%DLQ%tenant-a:g"}, "the engine sees every namespace")

	oa, err := a.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Equal(t, "orders", oa.Name)
	assert.Len(t, oa.Queues, 2)
	ob, err := b.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Len(t, ob.Queues, 3)

	eventually(t, 20*time.Second, func() bool {
		committed := func(ns *equeue.Namespace) int64 {
			g, err := ns.Group(ctx, "g")
			if err != nil {
				return -1
			}
			var n int64
			for _, q := range g.Queues {
				if q.Topic == "orders" {
					n += q.Committed
				}
			}
			return n
		}
		return committed(a) == 10 && committed(b) == 5
	}, "each namespace's group has its own offsets")
	gs, err := a.Groups(ctx)
	require.NoError(t, err)
	require.Len(t, gs, 1)
	assert.Equal(t, "g", gs[0].Name)
	for _, q := range gs[0].Queues {
		assert.NotContains(t, q.Topic, equeue.NamespaceSeparator)
	}
	for _, s := range gs[0].Subscriptions {
		assert.NotContains(t, s.Topic, equeue.NamespaceSeparator)
	}

	// No name reaches another namespace or the engine's own.
	assert.ErrorIs(t, a.CreateTopic(ctx, "tenant-b:orders", 1), equeue.ErrInvalidName)
	_, err = a.Route(ctx, "tenant-b:orders")
	assert.ErrorIs(t, err, equeue.ErrInvalidName)
	_, err = a.Topic(ctx, "tenant-b:orders")
	assert.Error(t, err)
	_, err = a.Pull(ctx, &equeue.PullRequest{Topic: "%DLQ%tenant-b:g"})
	assert.Error(t, err)
	assert.ErrorIs(t, a.DeleteTopic(ctx, "nope"), equeue.ErrTopicNotFound)
	_, err = e.Namespace("x:y")
	assert.ErrorIs(t, err, equeue.ErrInvalidName)
	_, err = e.Namespace("")
	assert.ErrorIs(t, err, equeue.ErrInvalidName)

	// Deleting tenant-a's topic leaves the others alone.
	require.NoError(t, a.DeleteTopic(ctx, "orders"))
	_, err = b.Topic(ctx, "orders")
	assert.NoError(t, err)
	_, err = e.Topic(ctx, "orders")
	assert.NoError(t, err)
}

func TestNamespace_LimitsAndDelayed(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	a, err := e.Namespace("a")
	require.NoError(t, err)
	b, err := e.Namespace("b")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 1, Overflow: equeue.OverflowReject}}))
	require.NoError(t, b.CreateTopic(ctx, "t", 1))
	pa, pb := newProducer(t, a, nil), newProducer(t, b, nil)
	_, err = pa.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("1")})
	require.NoError(t, err)
	_, err = pa.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("2")})
	assert.ErrorIs(t, err, equeue.ErrTopicFull)
	_, err = pb.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("2")})
	assert.NoError(t, err, "b's topic of the same name has no limit")

	_, err = pb.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("later"), Delay: time.Hour})
	require.NoError(t, err)
	da, err := a.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Zero(t, da.Pending, "a does not see b's delayed message")
	db, err := b.Delayed(ctx, 0)
	require.NoError(t, err)
	require.Equal(t, 1, db.Pending)
	assert.Equal(t, "t", db.Next[0].Topic)
}

func TestNamespace_SurvivesReopen(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	a, err := e.Namespace("a")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopicWith(ctx, "orders", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 10}}))
	p, err := equeue.NewProducer(a, nil)
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())
	var got bodies
	c, err := equeue.NewConsumer(a, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "orders"}}, Handler: got.handler("")})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	eventually(t, 20*time.Second, func() bool { return len(got.keys()) == 3 }, "consumed")
	require.NoError(t, c.Close()) // commits

	e = reopen()
	a, err = e.Namespace("a")
	require.NoError(t, err)
	ti, err := a.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Equal(t, int64(3), ti.Messages)
	assert.Equal(t, int64(10), ti.Limits.MaxMessages)
	g, err := a.Group(ctx, "g")
	require.NoError(t, err)
	var committed int64
	for _, q := range g.Queues {
		if q.Topic == "orders" {
			committed += q.Committed
		}
	}
	assert.Equal(t, int64(3), committed, "the namespaced group's offsets are stored under its own names")
	other, err := e.Namespace("b")
	require.NoError(t, err)
	_, err = other.Group(ctx, "g")
	assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
}

// A message sent through a view carries its engine-owned origin topic inside
// the namespace: a dead letter whose origin names another namespace's topic
// cannot be redriven into it. The redrive goes to the group's retry topic
// in the namespace, or with ToTopic to the topic the message was stored in
// there.
func TestNamespace_RedriveStaysInTheNamespace(t *testing.T) {
	for _, toTopic := range []bool{false, true} {
		t.Run(fmt.Sprintf("ToTopic=%v", toTopic), func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			a, err := e.Namespace("tenant-a")
			require.NoError(t, err)
			b, err := e.Namespace("tenant-b")
			require.NoError(t, err)
			require.NoError(t, a.CreateTopic(ctx, "jobs", 1))
			require.NoError(t, b.CreateTopic(ctx, "orders", 1))

			m := &equeue.Message{Body: []byte("forged")}
			m.SetSysProperties(map[string]string{equeue.SysOriginTopic: "tenant-b:orders", equeue.SysOriginQueue: "0", equeue.SysOriginOffset: "0"})
			_, err = a.Append(ctx, &equeue.AppendRequest{Topic: "jobs", Queue: 0, Messages: []*equeue.Message{m}})
			require.NoError(t, err)
			c := startConsumer(t, a, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
				Handler: func(ctx context.Context, m *equeue.Message) error { return equeue.DeadLetter(errors.New("bad")) }})
			var dls []equeue.DLQEntry
			eventually(t, 10*time.Second, func() bool {
				dls, err = a.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				return len(dls) == 1
			}, "one dead letter")
			require.NoError(t, c.Close())

			n, err := a.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: toTopic})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			ob, err := b.Topic(ctx, "orders")
			require.NoError(t, err)
			assert.Zero(t, ob.Messages, "tenant-a's redrive wrote into tenant-b's topic")
			if toTopic {
				jobs, err := a.Topic(ctx, "jobs")
				require.NoError(t, err)
				assert.Equal(t, int64(2), jobs.Messages, "back in tenant-a's topic")
				return
			}
			res, err := a.Pull(ctx, &equeue.PullRequest{Topic: equeue.RetryTopic("g")})
			require.NoError(t, err)
			require.Len(t, res.Messages, 1, "in tenant-a's retry topic of the group")
			assert.Equal(t, "jobs", res.Messages[0].SysProperty(equeue.SysOriginTopic), "its origin as the view names it")
		})
	}
}

// A pull through a view that meets a message larger than its MaxBytes gets
// a *MessageTooLargeError naming the queue as the view does, so a consumer
// on the view can match it to its grant and dead-letter the message.
func TestNamespace_TooLargeNamesTheViewsQueue(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	a, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopic(ctx, "orders", 1))
	_, err = a.Append(ctx, &equeue.AppendRequest{Topic: "orders", Messages: []*equeue.Message{{Body: make([]byte, 100)}}})
	require.NoError(t, err)
	_, err = a.Pull(ctx, &equeue.PullRequest{Topic: "orders", MaxBytes: 10})
	require.ErrorIs(t, err, equeue.ErrMessageTooLarge)
	var big *equeue.MessageTooLargeError
	require.ErrorAs(t, err, &big)
	assert.Equal(t, equeue.QueueRef{Topic: "orders", Queue: 0}, big.QueueRef)
	assert.Equal(t, int64(0), big.Offset)
	assert.NotContains(t, err.Error(), "tenant-a")
}
