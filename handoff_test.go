package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// slowCommitBroker holds the first commit after arm until another commit has
// gone through (or a deadline passes): a periodic commit that is slow on the
// wire while the consumer commits again.
type slowCommitBroker struct {
	equeue.Broker
	armed   atomic.Bool
	holding atomic.Bool
	held    chan struct{} // closed when a commit is held
	other   chan struct{} // closed when another commit went through meanwhile
	landed  chan struct{} // closed when the held commit has gone through
}

func (b *slowCommitBroker) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	if b.armed.CompareAndSwap(true, false) {
		b.holding.Store(true)
		close(b.held)
		select {
		case <-b.other:
		case <-time.After(300 * time.Millisecond):
		}
		b.holding.Store(false)
		defer close(b.landed)
		return b.Broker.CommitOffsets(ctx, req)
	}
	err := b.Broker.CommitOffsets(ctx, req)
	if b.holding.CompareAndSwap(true, false) {
		close(b.other)
		<-b.landed // the late commit lands before this one's caller goes on
	}
	return err
}

// TestConsumer_SlowPeriodicCommitDoesNotUndoFinalCommit: a periodic commit
// computed before Close must not land after Close's final commit, or the
// group's offset moves back and the next owner handles messages again.
func TestConsumer_SlowPeriodicCommitDoesNotUndoFinalCommit(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &slowCommitBroker{Broker: e, held: make(chan struct{}), other: make(chan struct{}), landed: make(chan struct{})}
	b.armed.Store(true)
	release := make(chan struct{})
	var released atomic.Bool
	unblock := func() {
		if released.CompareAndSwap(false, true) {
			close(release)
		}
	}
	t.Cleanup(unblock)
	var handled atomic.Int64
	c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Concurrency: 4, CommitInterval: 10 * time.Millisecond,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if m.Offset == 5 {
				<-release // offsets 0-4 are committable, 5 is in flight
			}
			handled.Add(1)
			return nil
		}})
	p := newProducer(t, e, nil)
	for i := range 10 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte{byte(i)}})
		require.NoError(t, err)
	}
	select {
	case <-b.held: // a periodic commit below offset 10 is on the wire
	case <-ctx.Done():
		t.Fatal("no periodic commit")
	}
	unblock()
	eventually(t, 10*time.Second, func() bool { return handled.Load() == 10 }, "handled %d of 10", func() any { return handled.Load() })
	require.NoError(t, c.Close())
	assert.Equal(t, int64(10), startedCommit(t, e, "g"), "the final commit stands")
}

// TestConsumer_CloseHandlesGapsBeforeCommitting: a concurrent pool finishes
// messages out of order. When a member stops, an unfinished message below
// finished ones (here offset 0, waiting for a local retry) is tried again
// before the final commit, so the commit passes every handled message and
// the next consumer gets nothing twice. If that attempt outlives
// ShutdownTimeout, Close cancels its context; its failure is a counted
// attempt, which a broadcasting member retries locally, so offset 0 stays
// uncommitted.
func TestConsumer_CloseHandlesGapsBeforeCommitting(t *testing.T) {
	for _, giveUp := range []bool{false, true} {
		t.Run(fmt.Sprintf("give-up=%v", giveUp), func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			var mu sync.Mutex
			seen := map[int64]int{}
			c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "a", Model: equeue.Broadcasting,
				Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest, Concurrency: 4,
				RetryDelay: time.Hour, CommitInterval: time.Hour, ShutdownTimeout: 50 * time.Millisecond,
				Handler: func(ctx context.Context, m *equeue.Message) error {
					mu.Lock()
					seen[m.Offset]++
					n := seen[m.Offset]
					mu.Unlock()
					switch {
					case m.Offset != 0:
						return nil
					case n == 1:
						return errors.New("first attempt fails") // retried locally in an hour
					case giveUp:
						<-ctx.Done()
						return ctx.Err()
					default:
						return nil
					}
				}})
			p := newProducer(t, e, nil)
			for i := range 10 {
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte{byte(i)}})
				require.NoError(t, err)
			}
			eventually(t, 10*time.Second, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(seen) == 10
			}, "all 10 offsets handled")
			require.NoError(t, c.Close())
			mu.Lock()
			assert.Equal(t, 2, seen[0], "offset 0: the failed attempt and the one on Close")
			for off := int64(1); off < 10; off++ {
				assert.Equal(t, 1, seen[off], "offset %d", off)
			}
			mu.Unlock()
			want := int64(10)
			if giveUp {
				want = 0
			}
			assert.Equal(t, want, startedCommit(t, e, "g"))
		})
	}
}

// TestConsumer_HandlersKeepTheirContextDuringHandoff: a rebalance lets the
// old owner's running handler finish with a live context; its message is
// committed and the new owner does not get it again.
func TestConsumer_HandlersKeepTheirContextDuringHandoff(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	started := make(chan struct{})
	var ctxErr atomic.Pointer[error]
	var byA atomic.Int64
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			From: equeue.ConsumeFromEarliest, CommitInterval: time.Hour, HeartbeatInterval: 100 * time.Millisecond,
			Handler: func(ctx context.Context, m *equeue.Message) error {
				if id == "a" {
					byA.Add(1)
					return nil
				}
				close(started)
				time.Sleep(300 * time.Millisecond) // "a" joins meanwhile and the queue is handed over
				err := ctx.Err()
				ctxErr.Store(&err)
				return err
			}}
	}
	// "b" owns the queue; "a" sorts first, so the queue moves to it on join.
	startConsumer(t, e, opts("b"))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	<-started
	a := startConsumer(t, e, opts("a"))
	eventually(t, 10*time.Second, func() bool { return len(statsOf(a, "t")) == 1 }, "a owns the queue")
	require.NotNil(t, ctxErr.Load())
	assert.NoError(t, *ctxErr.Load(), "the handler's context stays live during the handoff")
	assert.Equal(t, int64(1), startedCommit(t, e, "g"))
	time.Sleep(100 * time.Millisecond) // a redelivery would show up here
	assert.Zero(t, byA.Load(), "the new owner does not get the message again")
}

// TestConsumer_HandoffTimeoutCutsOffOrderlyHandler: in orderly mode the
// handler runs in the queue's pull loop. A handler that does not return
// holds a handoff only for HandoffTimeout: its context is then cancelled,
// the queue is released and the new owner gets the message.
func TestConsumer_HandoffTimeoutCutsOffOrderlyHandler(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	started := make(chan struct{})
	var byA atomic.Int64
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Orderly: true, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			From: equeue.ConsumeFromEarliest, CommitInterval: time.Hour, HeartbeatInterval: 100 * time.Millisecond,
			HandoffTimeout: 100 * time.Millisecond, RetryDelay: time.Hour,
			Handler: func(ctx context.Context, m *equeue.Message) error {
				if id == "a" {
					byA.Add(1)
					return nil
				}
				close(started)
				<-ctx.Done() // stuck until cut off
				return ctx.Err()
			}}
	}
	startConsumer(t, e, opts("b"))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	<-started
	startConsumer(t, e, opts("a"))
	eventually(t, 10*time.Second, func() bool { return byA.Load() == 1 }, "the new owner handles the message")
}

// slowReleaseBroker returns from ReleaseQueues late, after the engine has
// already told the group about the release.
type slowReleaseBroker struct{ equeue.Broker }

func (b slowReleaseBroker) ReleaseQueues(ctx context.Context, group, member string, qs []equeue.Grant) error {
	err := b.Broker.ReleaseQueues(ctx, group, member, qs)
	time.Sleep(100 * time.Millisecond)
	return err
}

// TestConsumer_QueueGrantedBackDuringHandoverRestarts: a queue moves away and
// back while its old runner is still draining; once the handover ends, the
// member must start the queue again under its new grant.
func TestConsumer_QueueGrantedBackDuringHandoverRestarts(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	var handled atomic.Int64
	running := make(chan struct{}, 4) // a handler of offset 0 started
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "g", ID: id, Subscriptions: []equeue.Subscription{{Topic: "t"}},
			From: equeue.ConsumeFromEarliest, HeartbeatInterval: 100 * time.Millisecond,
			Handler: func(ctx context.Context, m *equeue.Message) error {
				if m.Offset == 0 {
					running <- struct{}{}
					<-release
				}
				handled.Add(1)
				return nil
			}}
	}
	// "b" owns the queue; "a" sorts first, so the queue moves to it on join.
	b := startConsumer(t, slowReleaseBroker{e}, opts("b"))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("0")})
	require.NoError(t, err)
	// b's handler runs offset 0 (cached is not enough: a drain does not
	// start a message that no handler began).
	<-running
	a := startConsumer(t, e, opts("a"))
	eventually(t, 10*time.Second, func() bool { return len(statsOf(b, "t")) == 0 }, "b hands the queue over")
	require.NoError(t, a.Close()) // the queue goes back to b, which is still draining it
	unblock()
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("1")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return handled.Load() == 2 }, "b handles both messages (handled %d)", func() any { return handled.Load() })
}
