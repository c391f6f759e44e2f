package remote

import (
	"context"
	"errors"
	"fmt"

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
// While the leader is unknown or unreachable, the call runs as Append on a
// goroutine of its own. cb runs exactly once and must not block; once
// Close has returned, no cb runs any more.
func (cc *ClusterClient) AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	if ctx == nil {
		cb(equeue.AppendResult{}, fmt.Errorf("%w: nil context", equeue.ErrInvalidArgument))
		return
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

// appendAside runs req as Append on a goroutine of its own, which Close
// waits for, and reports to cb; once Close has begun, cb gets
// equeue.ErrClosed at once (nothing was stored).
func (cc *ClusterClient) appendAside(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	cc.mu.Lock()
	if cc.closed.Load() {
		cc.mu.Unlock()
		cb(equeue.AppendResult{}, fmt.Errorf("%w: cluster client closed", equeue.ErrClosed))
		return
	}
	cc.async.Add(1)
	cc.mu.Unlock()
	go func() {
		defer cc.async.Done()
		cb(cc.Append(ctx, req))
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
