package equeue_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/holdproxy"
	"github.com/equeue-go/equeue/remote"
)

// hangBroker passes calls on to its broker, but while hung its heartbeats
// neither succeed nor fail: they wait until it is let go (then go on to
// the broker) or their context ends, as over a connection to an engine
// that stopped answering.
type hangBroker struct {
	equeue.Broker
	mu   sync.Mutex
	hung chan struct{} // set while hung; closed when let go
}

func (h *hangBroker) hang() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hung == nil {
		h.hung = make(chan struct{})
	}
}

func (h *hangBroker) letGo() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hung != nil {
		close(h.hung)
		h.hung = nil
	}
}

func (h *hangBroker) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	h.mu.Lock()
	hung := h.hung
	h.mu.Unlock()
	if hung != nil {
		select {
		case <-hung:
		case <-ctx.Done():
			return equeue.Assignment{}, ctx.Err()
		}
	}
	return h.Broker.Heartbeat(ctx, req)
}

// hangingBroker returns a broker of e whose heartbeats can be made to
// hang, and the functions that hang it and let it go. Over "remote" it is
// a client of its own server behind a holdproxy.Proxy, so the whole connection
// hangs (its other calls too); otherwise a hangBroker around b.
func hangingBroker(t *testing.T, tr string, e *equeue.Engine, b equeue.Broker) (equeue.Broker, func(), func()) {
	t.Helper()
	if tr != "remote" {
		h := &hangBroker{Broker: b}
		t.Cleanup(h.letGo)
		return h, h.hang, h.letGo
	}
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	p := holdproxy.New(t, lis.Addr().String())
	t.Cleanup(p.LetGo)
	c, err := remote.Dial(p.Addr(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c, p.Hang, p.LetGo
}

// TestOrderly_HungMemberStartsNothingOnceItsQueueMoved: a member whose
// heartbeats hang (its engine stopped answering, without the connection
// failing) is expired after the session timeout and its queue goes to
// another member, while its own heartbeat neither succeeds nor fails. It
// must not go on with the messages it had pulled: once no heartbeat has
// got through for its lease (counted from the sending of the last one
// that did, and shorter than the session), it begins nothing more until
// its membership is confirmed again (here: refused, as it expired).
func TestOrderly_HungMemberStartsNothingOnceItsQueueMoved(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		testOrderlyHungMemberStartsNothingOnceItsQueueMoved(t, tr, 100*time.Millisecond)
	})
}

// TestOrderly_HungMemberWithTooLongAnIntervalStartsNothingOnceItsQueueMoved:
// the same with a HeartbeatInterval (1 s) longer than the engine's session
// (300 ms): a lease of two intervals would outlast the session, so the
// member takes the session the engine tells it and keeps its lease below
// it.
func TestOrderly_HungMemberWithTooLongAnIntervalStartsNothingOnceItsQueueMoved(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		testOrderlyHungMemberStartsNothingOnceItsQueueMoved(t, tr, time.Second)
	})
}

func testOrderlyHungMemberStartsNothingOnceItsQueueMoved(t *testing.T, tr string, interval time.Duration) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", &equeue.Options{SessionTimeout: 300 * time.Millisecond})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	hb, hang, letGo := hangingBroker(t, tr, e, b)
	defer letGo() // before b's Close, should the test fail while b hangs
	log := newHandoverLog()
	hold, held, release := holdAt(2)
	p := newProducer(t, b, nil)
	sendNumbered(t, p, 0, 10)
	member := orderlyMember("b", log.handler("b", hold), 0)
	member.HeartbeatInterval = interval
	startConsumer(t, hb, member)
	<-held // b pulled all ten and runs message 2
	hang()
	cutOffMemberStartsNothing(t, e, b, p, log, release, letGo)
}
