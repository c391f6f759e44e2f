package equeue_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestEngine_CloseClosesConsumersFirst: closing the engine before its
// consumers used to lose every commit silently (lag stayed 100). Engine.Close
// now closes the in-process consumers first, so their final commits are
// stored; the consumers' own Close calls afterwards are no-ops.
func TestEngine_CloseClosesConsumersFirst(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 3))
	var handled atomic.Int64
	var cs []*equeue.Consumer
	for _, id := range []string{"a", "b", "c"} {
		c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			From: equeue.ConsumeFromEarliest, CommitInterval: time.Hour,
			Handler: func(context.Context, *equeue.Message) error { handled.Add(1); return nil }})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		cs = append(cs, c)
	}
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	for i := range 100 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i)})
		require.NoError(t, err)
	}
	eventually(t, 30*time.Second, func() bool { return handled.Load() == 100 }, "handled %d of 100", func() any { return handled.Load() })
	e = reopen() // Engine.Close first, consumers and producer still open
	for _, c := range cs {
		assert.NoError(t, c.Close(), "already closed by the engine")
	}
	assert.NoError(t, p.Close())
	assert.Zero(t, groupLag(t, e, "g"), "the final commits were stored")
}

// TestConsumer_CloseReportsUnstoredCommit: a final commit that cannot be
// stored is reported by Consumer.Close, and by Engine.Close when the engine
// closes the consumer.
func TestConsumer_CloseReportsUnstoredCommit(t *testing.T) {
	for _, engineFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("engine-first=%v", engineFirst), func(t *testing.T) {
			ctx := ctxT(t)
			fs := faultstore.New(store.NewMemory())
			e, err := equeue.Open("", &equeue.Options{Store: fs})
			require.NoError(t, err)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			var handled atomic.Int64
			c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				From: equeue.ConsumeFromEarliest, CommitInterval: time.Hour,
				Handler: func(context.Context, *equeue.Message) error { handled.Add(1); return nil }})
			require.NoError(t, err)
			require.NoError(t, c.Start(ctx))
			p := newProducer(t, e, nil)
			for range 10 {
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
				require.NoError(t, err)
			}
			eventually(t, 30*time.Second, func() bool { return handled.Load() == 10 }, "handled %d of 10", func() any { return handled.Load() })
			fs.OnWrite(func(b *store.Batch) error {
				for _, op := range b.Meta {
					if strings.HasPrefix(string(op.Key), "off/") {
						return faultstore.ErrInjected
					}
				}
				return nil
			})
			if engineFirst {
				err = e.Close()
				require.ErrorIs(t, err, faultstore.ErrInjected)
				assert.ErrorContains(t, err, "final commit")
				assert.NoError(t, c.Close())
				return
			}
			err = c.Close()
			require.ErrorIs(t, err, faultstore.ErrInjected)
			assert.ErrorContains(t, err, "final commit")
			require.NoError(t, e.Close())
		})
	}
}

// lateAssignmentBroker swallows, once deaf is set, every assignment the
// engine returns to a heartbeat: the member's heartbeat loop has not
// applied a change yet when Close comes.
type lateAssignmentBroker struct {
	equeue.Broker
	deaf atomic.Bool
}

func (b *lateAssignmentBroker) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	a, err := b.Broker.Heartbeat(ctx, req)
	if b.deaf.Load() {
		<-ctx.Done() // Close stops the loop
		return equeue.Assignment{}, ctx.Err()
	}
	return a, err
}

// TestConsumer_CloseAfterResetIsNoError: an operator resets the group's
// offsets and the consumer is closed before it saw the reset. Its final
// commit is refused as fenced, which is what the reset is for (the
// consumer drops a fenced queue's position without committing when it sees
// the reset in time): Close returns nil and the reset's offset holds.
func TestConsumer_CloseAfterResetIsNoError(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &lateAssignmentBroker{Broker: e}
	var handled atomic.Int64
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		CommitInterval: time.Hour, HeartbeatInterval: 50 * time.Millisecond, PullWait: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { handled.Add(1); return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	p := newProducer(t, e, nil)
	for range 3 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		require.NoError(t, err)
	}
	waitWindow(t, c, "t", 3)
	b.deaf.Store(true)
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	assert.NoError(t, c.Close(), "a fence caused by the reset is no failure of Close")
	assert.Equal(t, int64(0), startedCommit(t, e, "g"), "the reset's offset holds")
	assert.Equal(t, int64(3), handled.Load())
}

// TestConsumer_CloseReportsUnstoredCommitBesideAFence: a final commit
// holds a queue of a deleted topic (refused as fenced, which is no
// failure) and a queue whose position cannot be stored (a failure).
// Close drops the fence and reports the failure, also for a consumer on a
// Namespace, whose errors carry the namespace's names. With the fence
// alone, Close returns nil.
func TestConsumer_CloseReportsUnstoredCommitBesideAFence(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		onNamespace, failWrites bool
	}{
		{"engine", false, true}, {"namespace", true, true},
		{"engine-fence-only", false, false}, {"namespace-fence-only", true, false},
	} {
		onNamespace := tc.onNamespace
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			fs := faultstore.New(store.NewMemory())
			e, err := equeue.Open("", &equeue.Options{Store: fs})
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, e.Close()) })
			var br equeue.Broker = e
			admin := e.DeleteTopic
			create := e.CreateTopic
			if onNamespace {
				ns, err := e.Namespace("tenant")
				require.NoError(t, err)
				br, admin, create = ns, ns.DeleteTopic, ns.CreateTopic
			}
			require.NoError(t, create(ctx, "t", 1))
			require.NoError(t, create(ctx, "u", 1))
			b := &lateAssignmentBroker{Broker: br}
			var handled atomic.Int64
			c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a",
				Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: "u"}}, From: equeue.ConsumeFromEarliest,
				CommitInterval: time.Hour, HeartbeatInterval: 50 * time.Millisecond, PullWait: 50 * time.Millisecond,
				Handler: func(context.Context, *equeue.Message) error { handled.Add(1); return nil }})
			require.NoError(t, err)
			require.NoError(t, c.Start(ctx))
			p := newProducer(t, br, nil)
			for _, topic := range []string{"t", "u"} {
				_, err := p.Send(ctx, &equeue.Message{Topic: topic, Body: []byte("x")})
				require.NoError(t, err)
			}
			waitWindow(t, c, "t", 1)
			waitWindow(t, c, "u", 1)
			b.deaf.Store(true)
			require.NoError(t, admin(ctx, "u"))
			if !tc.failWrites {
				assert.NoError(t, c.Close(), "the fence of the deleted topic is no failure")
				return
			}
			fs.OnWrite(func(b *store.Batch) error {
				for _, op := range b.Meta {
					if strings.HasPrefix(string(op.Key), "off/") {
						return faultstore.ErrInjected
					}
				}
				return nil
			})
			err = c.Close()
			require.ErrorIs(t, err, faultstore.ErrInjected, "t's final commit was not stored")
			assert.ErrorContains(t, err, "final commit")
			fs.OnWrite(nil)
		})
	}
}

// TestConsumer_CloseAfterTopicDeletedIsNoError: a topic is deleted before
// the consumer saw it. The final commit's refusal of its queue (fenced:
// the topic is gone) is no failure of Close, in-process or through
// remote, where the refusal arrives as the sentinels it matches.
func TestConsumer_CloseAfterTopicDeletedIsNoError(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		clusterSuiteOnly(t, tr)
		ctx := ctxT(t)
		e, br := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		require.NoError(t, e.CreateTopic(ctx, "u", 1))
		b := &lateAssignmentBroker{Broker: br}
		c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a",
			Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: "u"}}, From: equeue.ConsumeFromEarliest,
			CommitInterval: time.Hour, HeartbeatInterval: 50 * time.Millisecond, PullWait: 50 * time.Millisecond,
			Handler: func(context.Context, *equeue.Message) error { return nil }})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		p := newProducer(t, br, nil)
		for _, topic := range []string{"t", "u"} {
			_, err := p.Send(ctx, &equeue.Message{Topic: topic, Body: []byte("x")})
			require.NoError(t, err)
		}
		waitWindow(t, c, "t", 1)
		waitWindow(t, c, "u", 1)
		b.deaf.Store(true)
		require.NoError(t, e.DeleteTopic(ctx, "u"))
		assert.NoError(t, c.Close(), "the deleted topic's fence is no failure")
		assert.Equal(t, int64(1), startedCommit(t, e, "g"), "t's final commit was stored")
	})
}
