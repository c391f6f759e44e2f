package remote_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// members returns the group's member IDs and how many queues each owns.
func members(t testing.TB, a remote.Admin, group string) map[string]int {
	gi, err := a.Group(context.Background(), group)
	if err != nil {
		return nil
	}
	out := map[string]int{}
	for _, m := range gi.Members {
		out[m.ID] = len(m.Queues)
	}
	return out
}

// lazy formats as the result of calling it, when a message is printed.
type lazy func() string

func (l lazy) String() string { return l() }

func describe(a remote.Admin, group string) string {
	gi, err := a.Group(context.Background(), group)
	s := fmt.Sprintf("epoch %d err %v;", gi.Epoch, err)
	for _, m := range gi.Members {
		s += fmt.Sprintf(" %s=%v", m.ID, m.Queues)
	}
	for _, q := range gi.Queues {
		s += fmt.Sprintf(" [%s owner=%q committed=%d]", q.QueueRef, q.Owner, q.Committed)
	}
	return s
}

// settled reports whether the group's members are exactly cs, together own
// every queue of the group (its retry topic's included), and each consumer
// runs the queues the group says it owns.
func settled(t testing.TB, a remote.Admin, group string, cs ...*equeue.Consumer) bool {
	gi, err := a.Group(context.Background(), group)
	if err != nil || len(gi.Members) != len(cs) {
		return false
	}
	m := members(t, a, group)
	total := 0
	for _, c := range cs {
		if owned, ok := m[c.ID()]; !ok || owned != len(c.Queues()) {
			return false
		}
		total += len(c.Queues())
	}
	return total == len(gi.Queues)
}

// committed sums a group's committed offsets.
func committed(t testing.TB, a remote.Admin, group string) int64 {
	gi, err := a.Group(context.Background(), group)
	require.NoError(t, err)
	var n int64
	for _, q := range gi.Queues {
		n += max(q.Committed, 0)
	}
	return n
}

func TestRemote_ClusteringGroupExactlyOnce(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	admin := dial(t, s.addr, nil)
	require.NoError(t, admin.CreateTopic(ctx, "t", 4))
	col := newCollector()
	// The three join at once, so grants are handed over while members are
	// still joining (queues granted and revoked before a member saw them
	// must come back through Assignment.Revoking).
	var started []*equeue.Consumer
	for _, id := range []string{"c1", "c2", "c3"} {
		started = append(started, startConsumer(t, dial(t, s.addr, nil), equeue.ConsumerOptions{Group: "g", ID: id,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest, Handler: col.handler(id)}))
	}
	eventually(t, 10*time.Second, func() bool { return settled(t, admin, "g", started...) },
		"three members share the queues: %s", lazy(func() string { return describe(admin, "g") }))
	p := newProducer(t, dial(t, s.addr, nil))
	const n = 300
	for i := 0; i < n; i += 10 {
		batch := make([]*equeue.Message, 10)
		for j := range batch {
			batch[j] = &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i + j))}
		}
		if i%20 == 0 {
			_, err := p.SendBatch(ctx, batch)
			require.NoError(t, err)
			continue
		}
		for _, m := range batch {
			_, err := p.Send(ctx, m)
			require.NoError(t, err)
		}
	}
	eventually(t, 20*time.Second, func() bool { return col.count() >= n }, "all consumed; got %d", func() any { return col.count() })
	eventually(t, 10*time.Second, func() bool { return committed(t, admin, "g") == n }, "all committed")
	got := col.snapshot()
	require.Len(t, got, n)
	who := map[string]int{}
	for body, by := range got {
		assert.Len(t, by, 1, "message %s handled %v", body, by)
		who[by[0]]++
	}
	assert.Len(t, who, 3, "every member handled some: %v", who)
}

func TestRemote_Broadcast(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	cols := map[string]*collector{"b1": newCollector(), "b2": newCollector()}
	for id, col := range cols {
		startConsumer(t, dial(t, s.addr, nil), equeue.ConsumerOptions{Group: "bg", ID: id, Model: equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest, Handler: col.handler(id)})
	}
	eventually(t, 10*time.Second, func() bool { return len(members(t, e, "bg")) == 2 }, "both joined")
	p := newProducer(t, dial(t, s.addr, nil))
	const n = 50
	for i := 0; i < n; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	for id, col := range cols {
		eventually(t, 20*time.Second, func() bool { return col.count() >= n }, "%s got everything", id)
		got := col.snapshot()
		assert.Len(t, got, n)
		for body, by := range got {
			assert.Len(t, by, 1, "%s handled %s %d times", id, body, len(by))
		}
	}
}

func TestRemote_SilentMemberExpiresAndQueuesMove(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{SessionTimeout: 500 * time.Millisecond})
	s := startServer(t, e, "", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	col := newCollector()
	gone := dial(t, s.addr, nil)
	var cs []*equeue.Consumer
	for _, id := range []string{"c1", "c2"} {
		c := gone
		if id == "c2" {
			c = dial(t, s.addr, nil)
		}
		cs = append(cs, startConsumer(t, c, equeue.ConsumerOptions{Group: "g", ID: id, HeartbeatInterval: 100 * time.Millisecond,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest, Handler: col.handler(id)}))
	}
	eventually(t, 10*time.Second, func() bool {
		m := members(t, e, "g")
		return settled(t, e, "g", cs...) && m["c1"] > 0 && m["c2"] > 0
	}, "both own queues: %s", lazy(func() string { return describe(e, "g") }))

	// c1's process loses its connection without leaving the group.
	require.NoError(t, gone.Close())
	p := newProducer(t, e)
	const n = 40
	for i := 0; i < n; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool { return settled(t, e, "g", cs[1]) },
		"c1 expired after the session timeout and c2 owns every queue: %s", lazy(func() string { return describe(e, "g") }))
	eventually(t, 10*time.Second, func() bool {
		for i := 0; i < n; i++ {
			if !col.has(fmt.Sprint(i)) {
				return false
			}
		}
		return true
	}, "c2 received the remaining messages")
	for body, by := range col.snapshot() {
		assert.Equal(t, []string{"c2"}, by, "message %s sent after c1 vanished", body)
	}
}

func TestRemote_BrokerRestart(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	// The consumer's long-polls wait far longer than the test would, and
	// the stop has no grace period that would cut them short: a graceful
	// stop that waited them out would fail its select below.
	const wait = 10 * time.Minute
	e1, err := equeue.Open(dir, &equeue.Options{MaxPullWait: wait})
	require.NoError(t, err)
	s1 := startServer(t, e1, "", &remote.ServerOptions{GracefulStopTimeout: -1})
	addr := s1.addr

	client := dial(t, addr, nil)
	require.NoError(t, client.CreateTopic(ctx, "t", 2))
	p := newProducer(t, client)
	col := newCollector()
	cons := startConsumer(t, dial(t, addr, nil), equeue.ConsumerOptions{Group: "g", ID: "c", PullWait: wait,
		HeartbeatInterval: 100 * time.Millisecond, Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Handler: col.handler("c")})
	for i := 0; i < 10; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint("before-", i))})
		require.NoError(t, err)
	}
	eventually(t, 10*time.Second, func() bool { return col.count() == 10 }, "consumed before the restart")
	eventually(t, 10*time.Second, func() bool { return committed(t, e1, "g") == 10 }, "committed before the restart")

	// The broker goes down: graceful stop must not wait out the consumer's long-polls.
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s1.srv.GracefulStop()
		s1.stop()
	}()
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the graceful stop waited for the consumer's long-polls")
	}
	require.NoError(t, e1.Close())
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("lost")})
	assert.ErrorIs(t, err, remote.ErrUnavailable)
	assert.NotErrorIs(t, err, equeue.ErrClosed)

	// A new engine on the same data, served on the same address.
	e2, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e2.Close()) })
	s2 := startServer(t, e2, addr, nil)
	defer s2.stop()

	for i := 0; i < 10; i++ {
		m := &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint("after-", i))}
		eventually(t, 20*time.Second, func() bool {
			_, err := p.Send(ctx, m)
			if err != nil {
				require.ErrorIs(t, err, remote.ErrUnavailable)
			}
			return err == nil
		}, "the producer carries on")
	}
	eventually(t, 30*time.Second, func() bool {
		for i := 0; i < 10; i++ {
			if !col.has(fmt.Sprint("after-", i)) {
				return false
			}
		}
		return true
	}, "the consumer carries on after the restart")
	for body, by := range col.snapshot() {
		assert.Len(t, by, 1, "%s delivered %d times: offsets committed before the restart were kept", body, len(by))
	}
	require.NoError(t, cons.Close())
	assert.Equal(t, int64(20), committed(t, e2, "g"))
}
