package remote

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"google.golang.org/grpc/connectivity"

	"github.com/equeue-go/equeue"
)

// FastPathOwner returns cc: its AppendAsync stands in for its Append
// (equeue.OwnsFastPaths).
func (cc *ClusterClient) FastPathOwner() any { return cc }

// AppendAsync is Append that reports through cb instead of blocking the
// caller: equeue.Producer.SendAsync calls it. While the client knows the
// leader, the appends travel pipelined on the leader's AppendStream (see
// Client.AppendAsync), with no goroutine per call, except those whose ctx
// carries outgoing metadata of the caller's, which go as unary calls, in
// no order (see Client.AppendAsync).
//
// Outcomes and retries are those of Append (see ClusterClient): a refusal
// that stored nothing (equeue.ErrNotLeader, ErrBusy) is sent again to the
// leader the refusal names, or to the next node, through elections, on a
// goroutine of its own; an append the leader may have stored when the call
// broke, or that the leader answered after losing its leadership during
// the write (the client then follows the leader the answer names), is
// not retried and gets an error matching equeue.ErrIndeterminate.
// When the leader cannot be reached (ErrUnavailable, which an append whose
// stream broke with its connection also matches) or is too slow, the
// client forgets that leader: the next call looks for it among the nodes.
// An append that never left the client (the leader's stream or connection
// could not be opened) looks for it too, as Append does, and goes to the
// next node; one that may have left it is not sent again.
// While the leader is unknown or unreachable, the call runs as Append on a
// goroutine of its own, which looks for the leader (up to FailoverWait or
// ctx's deadline, then it reports the last error, equeue.ErrNotLeader,
// ErrBusy or ErrUnavailable: nothing was stored).
//
// Window: the client holds at most streamWindow (4,096) appends not yet
// reported, whether the leader is known or not, so a burst of sends during
// a failover starts no more goroutines than that. While the window is
// full, AppendAsync waits for a slot, as a Client's does: until an append
// is reported, ctx ends (cb gets ctx's error: not sent) or Close begins
// (equeue.ErrClosed: not sent). cb runs exactly once and must not block;
// once Close has returned, no cb runs any more: Close reports each append
// waiting for a slot or for the leader before it returns. As a Client's,
// an AppendAsync called from a callback that finds either window full
// reports ErrWindowFull at once (not sent), and a Close called from a
// callback begins the close without waiting (see Close).
func (cc *ClusterClient) AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	if ctx == nil {
		cc.runners.report(cb, equeue.AppendResult{}, fmt.Errorf("%w: nil context", equeue.ErrInvalidArgument))
		return
	}
	if !cc.calls.enter() {
		cc.runners.report(cb, equeue.AppendResult{}, fmt.Errorf("%w: cluster client closed", equeue.ErrClosed))
		return
	}
	defer cc.calls.leave()
	if !cc.takeSlot(ctx, cb) {
		return
	}
	report := cb
	cb = func(res equeue.AppendResult, err error) {
		<-cc.window
		report(res, err)
	}
	addr, n := cc.knownLeader()
	if n == nil {
		// Find the leader (or fail) as Append does.
		cc.appendAside(ctx, req, cb)
		return
	}
	n.c.AppendAsync(ctx, req, func(res equeue.AppendResult, err error) {
		defer cc.release(n)
		if err == nil || errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, ErrBusy) {
			cc.answered(n) // as onCluster records it
		}
		switch {
		case err == nil:
		case refusedNotLeader(err):
			// Nothing was stored: follow the node the refusal names.
			cc.redirect(addr, namedLeader(err, addr))
			cc.appendAside(ctx, req, cb)
			return
		case errors.Is(err, equeue.ErrNotLeader):
			// The leader lost its leadership during the write: the
			// outcome is unknown, so the append is not sent again, but
			// the next call goes to the leader the answer names.
			cc.redirect(addr, namedLeader(err, addr))
		case errors.Is(err, ErrBusy) && ctx.Err() == nil:
			cc.appendAside(ctx, req, cb)
			return
		case neverSent(err) && ctx.Err() == nil:
			// The leader's stream (or connection) could not open: the
			// append never left the client, so the next node may take it,
			// as Append sends it there.
			cc.redirect(addr, "")
			cc.unreachable(n)
			cc.appendAside(ctx, req, cb)
			return
		case errors.Is(err, ErrUnavailable), errors.Is(err, context.DeadlineExceeded):
			// Unreachable (the stream's connection failed included; the
			// append stays ErrIndeterminate then) or too slow: the next
			// call asks the others.
			cc.redirect(addr, "")
			if errors.Is(err, ErrUnavailable) {
				cc.unreachable(n)
			}
		}
		cb(res, err)
	})
}

// takeSlot takes a slot of cc's window, waiting while it is full; false
// when ctx ended or Close began first (cb is then called: nothing was
// sent).
func (cc *ClusterClient) takeSlot(ctx context.Context, cb func(equeue.AppendResult, error)) bool {
	select {
	case cc.window <- struct{}{}:
		return true
	default:
	}
	if cc.inCallback() {
		// A callback's append: its goroutine may be a node's reader,
		// whose answers would free a slot.
		cc.runners.call(cb, equeue.AppendResult{}, ErrWindowFull)
		return false
	}
	if hook := testHookClusterSlotWait.Load(); hook != nil {
		(*hook)()
	}
	select {
	case cc.window <- struct{}{}:
		return true
	case <-ctx.Done():
		cc.runners.report(cb, equeue.AppendResult{}, ctx.Err())
	case <-cc.stopping:
		cc.runners.report(cb, equeue.AppendResult{}, fmt.Errorf("%w: cluster client closed", equeue.ErrClosed))
	}
	return false
}

// appendAside runs req, which holds a slot of cc's window (cb frees it),
// as Append on a goroutine of its own, which Close waits for, and reports
// to cb; once Close has begun, cb gets equeue.ErrClosed at once (nothing
// was stored). The window bounds these goroutines.
func (cc *ClusterClient) appendAside(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	cc.mu.Lock()
	if cc.closed.Load() {
		cc.mu.Unlock()
		cc.runners.report(cb, equeue.AppendResult{}, fmt.Errorf("%w: cluster client closed", equeue.ErrClosed))
		return
	}
	cc.async.Add(1)
	cc.mu.Unlock()
	go func() {
		defer cc.async.Done()
		id := cc.runners.enter()
		defer cc.runners.exit(id)
		cc.asideStarted()
		res, err := cc.Append(ctx, req)
		cc.asideNow.Add(-1)
		cc.runners.call(cb, res, err)
	}()
}

// knownLeader returns the leader's address and node, acquired (the
// caller releases it), when the client knows the leader and can reach it;
// otherwise a nil node.
func (cc *ClusterClient) knownLeader() (string, *node) {
	addr := cc.Leader()
	if addr == "" {
		return "", nil
	}
	n, err := cc.acquire(addr)
	if err != nil {
		return "", nil
	}
	if n.c.conn.GetState() == connectivity.TransientFailure {
		cc.release(n)
		return "", nil
	}
	return addr, n
}

// asideStarted counts an append running aside, and the most at once.
func (cc *ClusterClient) asideStarted() {
	n := cc.asideNow.Add(1)
	for {
		peak := cc.asidePeak.Load()
		if n <= peak || cc.asidePeak.CompareAndSwap(peak, n) {
			return
		}
	}
}

// testHookClusterSlotWait, when set by a test, runs when a ClusterClient's
// AppendAsync finds its window full and waits for a slot (atomic as
// testHookBeforeBatch).
var testHookClusterSlotWait atomic.Pointer[func()]
