package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// handoverLog records which member ran which message of a one-queue
// topic, and every message one member began while another's handler ran.
type handoverLog struct {
	mu       sync.Mutex
	running  map[string]int   // member -> message running
	began    map[string][]int // member -> messages begun, in order
	handled  map[string][]int // member -> messages handled, in order
	overlaps []string
}

func newHandoverLog() *handoverLog {
	return &handoverLog{running: map[string]int{}, began: map[string][]int{}, handled: map[string][]int{}}
}

// handler is member's handler; hold, when it returns a channel for a
// message, keeps the handler in it (whatever its context) until the
// channel closes.
func (l *handoverLog) handler(member string, hold func(n int) <-chan struct{}) equeue.Handler {
	return func(ctx context.Context, m *equeue.Message) error {
		n, err := strconv.Atoi(string(m.Body))
		if err != nil {
			return equeue.DeadLetter(err)
		}
		l.mu.Lock()
		for other, k := range l.running {
			l.overlaps = append(l.overlaps, fmt.Sprintf("%s began %d while %s ran %d", member, n, other, k))
		}
		l.running[member] = n
		l.began[member] = append(l.began[member], n)
		l.mu.Unlock()
		if ch := hold(n); ch != nil {
			<-ch
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		delete(l.running, member)
		l.handled[member] = append(l.handled[member], n)
		return nil
	}
}

// snapshot returns copies of what member began and handled.
func (l *handoverLog) snapshot(member string) (began, handled []int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.began[member]...), append([]int(nil), l.handled[member]...)
}

func sendNumbered(t *testing.T, p *equeue.Producer, from, to int) {
	t.Helper()
	for n := from; n < to; n++ {
		_, err := p.Send(ctxT(t), &equeue.Message{Topic: "t", Keys: []string{"k"}, Body: []byte(strconv.Itoa(n))})
		require.NoError(t, err)
	}
}

func numbers(from, to int) []int {
	out := make([]int, 0, to-from)
	for n := from; n < to; n++ {
		out = append(out, n)
	}
	return out
}

// holdAt returns a hold for handoverLog.handler that keeps the handler of
// message at (its first run) until release is called, and held, closed
// once that handler runs.
func holdAt(at int) (hold func(n int) <-chan struct{}, held <-chan struct{}, release func()) {
	heldCh, releaseCh := make(chan struct{}), make(chan struct{})
	var once sync.Once
	hold = func(n int) <-chan struct{} {
		if n != at {
			return nil
		}
		once.Do(func() { close(heldCh) })
		return releaseCh
	}
	return hold, heldCh, func() { close(releaseCh) }
}

// cutOffMemberStartsNothing goes on from member b of group "g" cut off
// from the engine while its handler holds message 2 of the ten sent
// (release lets it return): the engine expires b, a new member a handles
// the queue up to 9, and b, its handler returned, begins nothing more;
// then heal lets b reach the engine again, and the group goes on with
// two more messages.
func cutOffMemberStartsNothing(t *testing.T, e *equeue.Engine, b equeue.Broker, p *equeue.Producer, log *handoverLog, release, heal func()) {
	t.Helper()
	ctx := ctxT(t)
	eventually(t, 10*time.Second, func() bool {
		g, err := e.Group(ctx, "g")
		return err == nil && len(g.Members) == 0
	}, "b expires")
	startConsumer(t, b, orderlyMember("a", log.handler("a", func(int) <-chan struct{} { return nil }), 0))
	eventually(t, 10*time.Second, func() bool { _, h := log.snapshot("a"); return len(h) > 0 && h[len(h)-1] == 9 }, "a handles the queue")
	release() // b's handler returns
	eventually(t, 10*time.Second, func() bool { _, h := log.snapshot("b"); return len(h) >= 3 }, "b's handler returns")
	// Give b the time to begin what it still holds, if it would.
	time.Sleep(200 * time.Millisecond)
	beganB, _ := log.snapshot("b")
	require.Equal(t, numbers(0, 3), beganB, "b began messages after its queue went to a")
	heal() // b hears that it expired and rejoins
	sendNumbered(t, p, 10, 12)
	eventually(t, 10*time.Second, func() bool {
		_, byA := log.snapshot("a")
		_, byB := log.snapshot("b")
		done := map[int]bool{}
		for _, n := range append(byA, byB...) {
			done[n] = true
		}
		return done[10] && done[11]
	}, "the group goes on")
}

func orderlyMember(id string, h equeue.Handler, handoff time.Duration) equeue.ConsumerOptions {
	return equeue.ConsumerOptions{Group: "g", ID: id, Orderly: true, Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: h, HandoffTimeout: handoff, CommitInterval: 20 * time.Millisecond, HeartbeatInterval: 100 * time.Millisecond}
}

// TestOrderly_HandoverWaitsForTheOldOwnersHandler: when a queue moves
// from member b to a new member a, b's running handler finishes before a
// begins the queue: a begins nothing while b holds its message, and then
// goes on right after it (b committed what it handled before releasing
// the queue), each message handled once, in order.
func TestOrderly_HandoverWaitsForTheOldOwnersHandler(t *testing.T) {
	forTransports(t, testOrderlyHandoverWaitsForTheOldOwnersHandler)
}

func testOrderlyHandoverWaitsForTheOldOwnersHandler(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	log := newHandoverLog()
	hold, held, release := holdAt(2)
	oldOwner := startConsumer(t, b, orderlyMember("b", log.handler("b", hold), 0))
	p := newProducer(t, b, nil)
	sendNumbered(t, p, 0, 10)
	<-held
	// "a" sorts first: the queue is allocated to it once it joins.
	startConsumer(t, b, orderlyMember("a", log.handler("a", func(int) <-chan struct{} { return nil }), 0))
	eventually(t, 10*time.Second, func() bool {
		g, err := e.Group(ctx, "g")
		return err == nil && len(g.Members) == 2
	}, "a joins")
	// Give a the time of a few heartbeats to begin the queue too early.
	time.Sleep(300 * time.Millisecond)
	began, _ := log.snapshot("a")
	require.Empty(t, began, "a began the queue while b's handler still ran")
	release()
	eventually(t, 10*time.Second, func() bool { _, h := log.snapshot("a"); return len(h) == 7 }, "a handles the rest")
	_, byB := log.snapshot("b")
	_, byA := log.snapshot("a")
	require.Equal(t, numbers(0, 3), byB)
	require.Equal(t, numbers(3, 10), byA)
	require.NoError(t, oldOwner.Close())
	log.mu.Lock()
	defer log.mu.Unlock()
	require.Empty(t, log.overlaps)
}

// TestOrderly_HandlerPastTheHandoffCannotCommitOverTheNewOwner: an old
// owner's handler that ignores its context past both of HandoffTimeout's
// waits is given up (README: the queue is released and its message goes to
// the new owner). Its late return must not move the group's offset: the new
// owner's progress stands, and the old owner begins nothing more.
func TestOrderly_HandlerPastTheHandoffCannotCommitOverTheNewOwner(t *testing.T) {
	forTransports(t, testOrderlyHandlerPastTheHandoffCannotCommitOverTheNewOwner)
}

func testOrderlyHandlerPastTheHandoffCannotCommitOverTheNewOwner(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	log := newHandoverLog()
	hold, held, release := holdAt(2)
	oldOwner := startConsumer(t, b, orderlyMember("b", log.handler("b", hold), 50*time.Millisecond))
	p := newProducer(t, b, nil)
	sendNumbered(t, p, 0, 10)
	<-held
	startConsumer(t, b, orderlyMember("a", log.handler("a", func(int) <-chan struct{} { return nil }), 0))
	ref := equeue.QueueRef{Topic: "t"}
	committed := func() int64 {
		offs, err := e.GroupOffsets(ctx, "g")
		require.NoError(t, err)
		return offs[ref]
	}
	eventually(t, 10*time.Second, func() bool { return committed() == 10 }, "a handles 2 to 9 and commits")
	release() // b's handler returns, late
	eventually(t, 10*time.Second, func() bool { _, h := log.snapshot("b"); return len(h) >= 3 }, "b's handler returns")
	require.NoError(t, oldOwner.Commit(ctx))
	sendNumbered(t, p, 10, 12)
	eventually(t, 10*time.Second, func() bool { return committed() == 12 }, "a goes on")
	require.NoError(t, oldOwner.Close())
	require.Equal(t, int64(12), committed())
	beganB, _ := log.snapshot("b")
	_, byA := log.snapshot("a")
	require.Equal(t, numbers(0, 3), beganB, "b began a message after it gave the queue up")
	require.Equal(t, numbers(2, 12), byA)
}

// errCut is the error of a broker cut off from its engine.
var errCut = errors.New("cut off")

// cutBroker passes calls on to its broker until cut, and then fails them
// all, as a network partition between a member and its engine would.
type cutBroker struct {
	equeue.Broker
	cut atomic.Bool
}

func (c *cutBroker) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if c.cut.Load() {
		return equeue.PullResult{}, errCut
	}
	return c.Broker.Pull(ctx, req)
}

func (c *cutBroker) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	if c.cut.Load() {
		return equeue.Assignment{}, errCut
	}
	return c.Broker.JoinGroup(ctx, req)
}

func (c *cutBroker) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	if c.cut.Load() {
		return equeue.Assignment{}, errCut
	}
	return c.Broker.Heartbeat(ctx, req)
}

func (c *cutBroker) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Broker.LeaveGroup(ctx, req)
}

func (c *cutBroker) ReleaseQueues(ctx context.Context, group, member string, qs []equeue.Grant) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Broker.ReleaseQueues(ctx, group, member, qs)
}

func (c *cutBroker) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	if c.cut.Load() {
		return errCut
	}
	return c.Broker.CommitOffsets(ctx, req)
}

func (c *cutBroker) FetchOffsets(ctx context.Context, group, member string, qs []equeue.Grant) ([]equeue.OffsetCommit, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.Broker.FetchOffsets(ctx, group, member, qs)
}

func (c *cutBroker) SendBack(ctx context.Context, req *equeue.SendBackRequest) (equeue.SendBackResult, error) {
	if c.cut.Load() {
		return equeue.SendBackResult{}, errCut
	}
	return c.Broker.SendBack(ctx, req)
}

// TestOrderly_CutOffMemberStartsNothingOnceItsQueueMoved: a member cut
// off from its engine (a network partition) is expired after the
// session timeout and its queue goes to another member. The cut-off
// member cannot hear it, but it must not go on with the messages it had
// pulled: once its heartbeats fail, it begins no new message of the queue
// until its membership is confirmed again (here: refused, as it expired),
// so the queue runs one handler at a time and each key's messages in
// order.
func TestOrderly_CutOffMemberStartsNothingOnceItsQueueMoved(t *testing.T) {
	forTransports(t, testOrderlyCutOffMemberStartsNothingOnceItsQueueMoved)
}

func testOrderlyCutOffMemberStartsNothingOnceItsQueueMoved(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: 300 * time.Millisecond})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	log := newHandoverLog()
	hold, held, release := holdAt(2)
	cut := &cutBroker{Broker: b}
	p := newProducer(t, b, nil)
	sendNumbered(t, p, 0, 10)
	startConsumer(t, cut, orderlyMember("b", log.handler("b", hold), 0))
	<-held // b pulled all ten and runs message 2
	cut.cut.Store(true)
	cutOffMemberStartsNothing(t, e, b, p, log, release, func() { cut.cut.Store(false) })
}
