package equeue

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grantBackBroker holds member "a"'s handover release of queue t/0 until
// the test lets it go on. With early, it returns from it only once "a"
// applied the assignment that release brought (the engine grants the
// queue straight back to "a", under a new epoch): that assignment is
// applied while the queue is still being handed over; from then on it
// counts the heartbeats it answers, and records how many it had answered
// when the queue's offsets were fetched again (the queue restarting). A
// heartbeat answered after the release then waits for that restart, or
// for grantBackHoldCap, so that a restart that needs no heartbeat is seen
// before any, however slow the machine. It counts the fetches of the
// queue's offsets that fail after the release.
type grantBackBroker struct {
	*Engine
	c        *Consumer
	early    bool
	failed   atomic.Int64
	armed    atomic.Bool
	entered  chan struct{} // closed when the held release began
	hold     chan struct{} // closed by the test: the release goes on
	released atomic.Bool
	answered atomic.Int64
	once     sync.Once
	fetched  chan struct{} // closed at the queue's restart
	seen     atomic.Int64  // heartbeats answered before that restart
}

const grantBackHoldCap = 5 * time.Second

var grantBackRef = QueueRef{Topic: "t", Queue: 0}

func (b *grantBackBroker) ReleaseQueues(ctx context.Context, group, member string, queues []Grant) error {
	if member != "a" || len(queues) != 1 || queues[0].QueueRef != grantBackRef || !b.armed.CompareAndSwap(true, false) {
		return b.Engine.ReleaseQueues(ctx, group, member, queues)
	}
	close(b.entered)
	<-b.hold
	if err := b.Engine.ReleaseQueues(ctx, group, member, queues); err != nil {
		return err
	}
	want := memberVersion(b.Engine, group, member)
	for b.early && b.appliedVersion() < want {
		time.Sleep(time.Millisecond)
	}
	b.released.Store(true)
	return nil
}

func (b *grantBackBroker) appliedVersion() int64 {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	return b.c.version
}

func (b *grantBackBroker) Heartbeat(ctx context.Context, req *HeartbeatRequest) (Assignment, error) {
	a, err := b.Engine.Heartbeat(ctx, req)
	if req.Member == "a" && b.early && b.released.Load() {
		select {
		case <-b.fetched:
		case <-ctx.Done():
		case <-time.After(grantBackHoldCap):
		}
		b.answered.Add(1)
	}
	return a, err
}

func (b *grantBackBroker) FetchOffsets(ctx context.Context, group, member string, grants []Grant) ([]OffsetCommit, error) {
	if member == "a" && b.released.Load() {
		for _, g := range grants {
			if g.QueueRef == grantBackRef {
				b.once.Do(func() {
					b.seen.Store(b.answered.Load())
					close(b.fetched)
				})
			}
		}
	}
	offs, err := b.Engine.FetchOffsets(ctx, group, member, grants)
	if err != nil && member == "a" && b.released.Load() {
		b.failed.Add(1)
	}
	return offs, err
}

// memberVersion is the assignment version the engine holds for a member.
func memberVersion(e *Engine, group, member string) int64 {
	grp, err := e.groups.group(group)
	if err != nil {
		return 0
	}
	grp.mu.Lock()
	defer grp.mu.Unlock()
	if m, ok := grp.members[member]; ok {
		return m.version
	}
	return 0
}

// TestConsumer_QueueGrantedBackDuringItsHandoverRestartsWithoutAHeartbeat:
// a queue taken from an orderly member (another one joined) and granted
// back to it (that one left) while it still hands the queue over restarts
// under the grant its release brought. When the assignment with that
// grant is applied before the handover ended ("applied during the
// handover"), the queue restarts as soon as the handover ended, without
// waiting for a heartbeat to bring that assignment again; before, the
// member applied it again only after its next heartbeat (which long-polls
// up to HeartbeatInterval) was answered. When it comes after ("applied
// after the handover"), it starts the queue itself, and the member does
// not try the grant it released meanwhile: no fetch of the queue's
// offsets fails.
func TestConsumer_QueueGrantedBackDuringItsHandoverRestartsWithoutAHeartbeat(t *testing.T) {
	t.Run("applied during the handover", func(t *testing.T) { testQueueGrantedBackDuringItsHandover(t, true) })
	t.Run("applied after the handover", func(t *testing.T) { testQueueGrantedBackDuringItsHandover(t, false) })
}

func testQueueGrantedBackDuringItsHandover(t *testing.T, early bool) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &grantBackBroker{Engine: e, early: early, entered: make(chan struct{}), hold: make(chan struct{}), fetched: make(chan struct{})}
	t.Cleanup(func() {
		select {
		case <-b.hold:
		default:
			close(b.hold)
		}
	})
	handler := func(context.Context, *Message) error { return nil }
	b.c, err = NewConsumer(b, ConsumerOptions{Group: "g", ID: "a", Orderly: true, Subscriptions: []Subscription{{Topic: "t"}},
		HeartbeatInterval: 200 * time.Millisecond, Handler: handler})
	require.NoError(t, err)
	c := b.c
	require.NoError(t, c.Start(ctx))
	defer func() { require.NoError(t, c.Close()) }()
	require.Len(t, c.Queues(), 1, "a runs the queue")
	first := c.Queues()[0].Epoch

	// "0" sorts before "a": the average strategy moves the queue to it,
	// and a hands it over, its release held.
	b.armed.Store(true)
	other, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "0", Orderly: true, Subscriptions: []Subscription{{Topic: "t"}},
		HeartbeatInterval: 200 * time.Millisecond, Handler: handler})
	require.NoError(t, err)
	require.NoError(t, other.Start(ctx))
	select {
	case <-b.entered:
	case <-ctx.Done():
		t.Fatal("a never released the queue")
	}
	// "0" leaves: the queue, still a's, is a's again, and a applies that
	// while the queue is handed over.
	require.NoError(t, other.Close())
	waitFor(t, func() bool { return b.appliedVersion() >= memberVersion(e, "g", "a") }, "a applies the assignment that grants the queue back")
	close(b.hold)

	select {
	case <-b.fetched:
	case <-ctx.Done():
		t.Fatal("the queue never restarted")
	}
	if early {
		assert.Zero(t, b.seen.Load(), "heartbeats answered before the queue granted back restarted")
	}
	waitFor(t, func() bool {
		qs := c.Queues()
		return len(qs) == 1 && qs[0].Epoch > first
	}, "a runs the queue under its new grant")
	assert.Zero(t, b.failed.Load(), "fetches of the queue's offsets that failed")
}
