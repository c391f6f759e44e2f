package remote

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// connWatch counts what tells a client that its connection left: the
// times its state left READY, or CONNECTING, for IDLE, TRANSIENT_FAILURE
// or SHUTDOWN (departures), and the connections begun (began, from the
// client's stats handler). The state alone, read when needed, misses a
// departure that a reconnect has already hidden (READY again), and gRPC
// may hand calls a new connection while its state still says CONNECTING;
// the counts keep each. An append stream notes them when it opens: once
// one moved, its connection may be gone (connLeft).
//
// The departures follow the state on a goroutine of its own, which may
// see the state only after it moved on: a departure whose state it did
// not see (READY, then READY again; READY, then CONNECTING) still counts,
// but one from a CONNECTING that hid a connection in use to a READY of
// the next does not. The next connection's beginning counts that one: it
// is counted before any call can use it. Its methods take a nil
// *connWatch, which counts nothing.
type connWatch struct {
	left   atomic.Uint64
	begun  atomic.Uint64
	cancel context.CancelFunc
	done   chan struct{}
}

// newConnWatch returns a connWatch that counts the connections begun;
// start has it count conn's departures too.
func newConnWatch() *connWatch {
	return &connWatch{done: make(chan struct{})}
}

// start counts conn's departures, on a goroutine of its own, until close.
func (w *connWatch) start(conn *grpc.ClientConn) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel = cancel
	go w.run(ctx, conn)
}

func (w *connWatch) run(ctx context.Context, conn *grpc.ClientConn) {
	defer close(w.done)
	s := conn.GetState()
	for conn.WaitForStateChange(ctx, s) {
		next := conn.GetState()
		if departed(s, next) {
			w.left.Add(1)
		}
		if next == connectivity.Shutdown {
			return // closed: no state follows
		}
		s = next
	}
}

// departed reports whether a state seen to change from was to now (both
// read with states between them perhaps unseen) may have gone through a
// departure.
func departed(was, now connectivity.State) bool {
	switch {
	case now == connectivity.Shutdown:
		return true
	case was == now:
		// It left was and came back: a connection may have come and gone.
		return true
	case was == connectivity.Ready:
		// READY leaves only with its connection (to CONNECTING through
		// IDLE or TRANSIENT_FAILURE).
		return true
	case was == connectivity.Connecting:
		return now == connectivity.Idle || now == connectivity.TransientFailure
	}
	return false // coming up: IDLE or TRANSIENT_FAILURE to CONNECTING or READY
}

// connBegan counts a connection begun (the stats handler's ConnBegin).
func (w *connWatch) connBegan() {
	if w != nil {
		w.begun.Add(1)
	}
}

// departures is how many times the connection was seen to leave.
func (w *connWatch) departures() uint64 {
	if w == nil {
		return 0
	}
	return w.left.Load()
}

// began is how many connections began.
func (w *connWatch) began() uint64 {
	if w == nil {
		return 0
	}
	return w.begun.Load()
}

// close stops counting departures and waits for start's goroutine.
func (w *connWatch) close() {
	if w.cancel == nil {
		return // never started
	}
	w.cancel()
	<-w.done
}
