package remote

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/connectivity"

	"github.com/equeue-go/equeue"
)

// ClusterClient is a client of a replicated cluster (package cluster). It
// knows several nodes' addresses, sends every call to the leader, follows
// a follower's answer naming the leader, and retries through elections
// with backoff. It implements equeue.Broker, so producers and consumers use
// it as they use a Client. Safe for concurrent use; Close it when done.
//
// Retries: a refusal matching equeue.ErrNotLeader or ErrBusy did nothing,
// so every call is retried on it. Calls that change nothing twice when
// repeated (Route, Pull, group membership, offsets, SendBack: the engine
// stores a send-back of one pulled message at most once, and answers a
// repeat with SendBackResult.Duplicate, or refuses it when it reaches a
// new leader that has not seen the member's join or pull) are also
// retried when a node cannot be reached, or answers that their outcome is
// unknown (equeue.ErrIndeterminate: the leader lost its leadership during
// their write). Append is not: when the connection fails during one,
// it may have been stored, and the error (ErrUnavailable, or
// equeue.ErrIndeterminate, matching ErrUnavailable as well when the
// connection failed with the append sent, or when the leader lost its
// leadership during the write) is returned; the client then forgets that
// leader, or, when the leader lost its leadership and its answer names
// the new one, takes that one for the leader, without sending the append
// again. A call that never left the client, the node refusing the
// connection (ErrUnavailable, nothing sent), goes to the next node,
// Append and the admin changes included. Send again with the same message IDs on a topic
// with a dedup window to store it at most once.
// Retries stop when the call's context ends, or after FailoverWait.
//
// Addresses: the client keeps those given to DialCluster, and up to
// maxLearnedAddrs leader addresses the nodes' answers named. A learned
// address is forgotten, with its connection (once the calls using it are
// done), when it has been unreachable for a minute, or when newer ones
// push it out; a node naming it the leader later makes it known again.
type ClusterClient struct {
	opts  ClientOptions
	given int // addrs[:given] were given to DialCluster, and are kept

	mu sync.Mutex
	// addrs holds every address known, in the order given, then learned.
	addrs   []string
	clients map[string]*node
	// retiring holds the nodes forgotten while calls use them: their
	// clients are closed once the last call is done (release), or by Close.
	retiring map[*node]struct{}
	leader   string // best guess; "" when unknown
	next     int    // round robin over addrs when the leader is unknown
	uses     uint64 // orders the learned nodes' uses (node.used)

	closed atomic.Bool
	// async counts AppendAsync calls retried as Append on goroutines of
	// their own (at most the window's size): Close waits for them (added
	// to under mu, never after Close set closed).
	async sync.WaitGroup
	// closing counts the forgotten nodes' clients being closed (retire):
	// Close waits for them (added to under mu, never after Close set
	// closed).
	closing sync.WaitGroup
	// closeDone is closed once the first Close is done: a later or
	// concurrent Close waits for it.
	closeDone chan struct{}

	// window holds a slot per AppendAsync call not yet reported, as a
	// Client's append window does: while it is full, AppendAsync waits.
	window chan struct{}
	// stopping is closed when Close begins: AppendAsync calls waiting for
	// a slot give up. calls counts the AppendAsync calls in progress, for
	// Close to wait for.
	stopping chan struct{}
	calls    *callGate
	// runners records the goroutines running its callbacks (those of
	// appends aside, or reported at once), or its close; each node's
	// client records its own.
	runners *callbackRunners
	// owed keeps the error of a close begun from a callback.
	owed owedErr
	// asideNow counts the appends running as Append aside (appendAside),
	// asidePeak the most at once.
	asideNow, asidePeak atomic.Int64
}

// FailoverWait bounds how long a ClusterClient call retries through an
// election when its context has no deadline.
const FailoverWait = 30 * time.Second

// failoverWait is FailoverWait; tests shorten it.
var failoverWait = FailoverWait

var _ equeue.Broker = (*ClusterClient)(nil)

// DialCluster returns a client of the cluster whose nodes serve at addrs
// (each "host:port"). One reachable node is enough: followers name the
// leader. opts apply to the connection to each node.
func DialCluster(addrs []string, opts *ClientOptions) (*ClusterClient, error) {
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: no addresses", equeue.ErrInvalidArgument)
	}
	cc := &ClusterClient{clients: map[string]*node{}, retiring: map[*node]struct{}{}, closeDone: make(chan struct{}),
		window: make(chan struct{}, streamWindow), stopping: make(chan struct{}), calls: newCallGate(), runners: newCallbackRunners(nil)}
	if opts != nil {
		cc.opts = *opts
	}
	cc.opts.DialTimeout = 0 // connect lazily: some nodes may be down
	for _, a := range addrs {
		if a == "" {
			return nil, fmt.Errorf("%w: empty address", equeue.ErrInvalidArgument)
		}
		if !slices.Contains(cc.addrs, a) {
			cc.addrs = append(cc.addrs, a)
		}
	}
	cc.given = len(cc.addrs)
	return cc, nil
}

// target is the address to call next.
func (cc *ClusterClient) target() string {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.leader != "" {
		return cc.leader
	}
	a := cc.addrs[cc.next%len(cc.addrs)]
	cc.next++
	return a
}

// redirect records what a call to addr learned: the leader's address, or
// that addr is not it (leader "").
func (cc *ClusterClient) redirect(addr, leader string) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	switch {
	case leader != "":
		cc.leader = leader
		cc.named(leader)
	case cc.leader == addr:
		cc.leader = ""
	}
}

// Leader returns the address the client currently takes for the leader's,
// "" when it does not know.
func (cc *ClusterClient) Leader() string {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.leader
}

// Close closes the connections to every node, after which no AppendAsync
// callback runs any more: the appends waiting for a window slot or for the
// leader are reported (equeue.ErrClosed: not stored, or
// equeue.ErrIndeterminate for one sent) before it returns. Idempotent: a later or concurrent Close returns
// nil once the first is done
// (but see a Close from a callback, below).
//
// The node clients are closed without cc.mu held: closing one waits for its
// append stream's reader, whose AppendAsync callbacks take cc.mu (redirect).
// Once closed is set, acquire adds no node and retire closes none, so the
// nodes are Close's alone.
//
// Close called from an AppendAsync callback (or from one that Close
// itself runs) does not wait, as a Client's (see Client.Close): it begins
// the close, which a goroutine of the client completes once the callbacks
// in progress have returned, and returns nil; the first Close called from
// elsewhere afterwards returns the close's error.
func (cc *ClusterClient) Close() error {
	if cc.inCallback() {
		cc.mu.Lock()
		if cc.closed.CompareAndSwap(false, true) {
			go func() {
				cc.mu.Lock()
				_ = cc.shutdown(true)
			}()
		}
		cc.mu.Unlock()
		return nil
	}
	cc.mu.Lock()
	if !cc.closed.CompareAndSwap(false, true) {
		cc.mu.Unlock()
		<-cc.closeDone
		return cc.owed.take()
	}
	return cc.shutdown(false)
}

// inCallback reports whether the current goroutine runs a callback of cc
// or of one of its nodes' clients, or cc's close. The nodes' clients
// record their callbacks in cc.runners too (their runners' parent): it
// takes no cc.mu and looks at no node, which may come and go meanwhile.
func (cc *ClusterClient) inCallback() bool {
	return cc.runners.current()
}

// shutdown is the work of the first Close, which set closed with cc.mu
// held: it unlocks cc.mu. owe says that the Close that began it has
// returned: its error is kept for the next Close. A callback it runs
// (a node's Close reports that node's appends) that panics does not stop
// it: it closes every node and waits all the same, marks the close done,
// and then lets the panic go on.
func (cc *ClusterClient) shutdown(owe bool) (err error) {
	id := cc.runners.enter()
	defer cc.runners.exit(id)
	defer func() {
		if owe {
			cc.owed.owe(err)
		}
		close(cc.closeDone)
	}()
	close(cc.stopping)
	cc.calls.close()
	clients := make([]*Client, 0, len(cc.clients)+len(cc.retiring))
	for _, n := range cc.clients {
		clients = append(clients, n.c)
	}
	for n := range cc.retiring {
		clients = append(clients, n.c)
	}
	cc.mu.Unlock()
	var errs []error
	defer func() {
		// The AppendAsync calls waiting for a slot gave up: they report
		// equeue.ErrClosed now. The appends retried as Append end now: the
		// client is closed.
		cc.calls.wait()
		cc.async.Wait()
		cc.closing.Wait()
		err = errors.Join(errs...)
	}()
	forEach(newClosePanics(cc.opts.Logger), clients, func(c *Client) { errs = append(errs, c.Close()) })
	return nil // the nodes' errors, joined above
}

// onCluster runs f on the leader's client until it succeeds, fails with an
// error retrying cannot help, or ctx (or FailoverWait) ends. repeatable
// says whether f may run again after a failure that may have reached the
// node (see ClusterClient).
func onCluster[T any](ctx context.Context, cc *ClusterClient, repeatable bool, f func(*Client) (T, error)) (T, error) {
	var zero T
	if ctx == nil {
		return zero, fmt.Errorf("%w: nil context", equeue.ErrInvalidArgument)
	}
	giveUp := time.Now().Add(failoverWait)
	if d, ok := ctx.Deadline(); ok {
		giveUp = d
	}
	delay := 10 * time.Millisecond
	var last error
	hops := 0 // redirects followed without waiting
	for attempt := 0; ; attempt++ {
		if attempt > 0 && hops == 0 {
			if time.Now().Add(delay).After(giveUp) {
				return zero, last
			}
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return zero, last
			case <-t.C:
			}
			delay = min(2*delay, 500*time.Millisecond)
		}
		addr := cc.target()
		n, err := cc.acquire(addr)
		if err != nil {
			if errors.Is(err, equeue.ErrClosed) {
				return zero, err
			}
			last = err
			cc.redirect(addr, "")
			continue
		}
		if !repeatable && n.c.conn.GetState() == connectivity.TransientFailure {
			// The node cannot be reached: a call would fail before it is
			// sent. Try another one.
			n.c.conn.Connect()
			last = fmt.Errorf("%w: %s unreachable", ErrUnavailable, addr)
			cc.redirect(addr, "")
			cc.unreachable(n)
			cc.release(n)
			continue
		}
		v, err := f(n.c)
		if errors.Is(err, ErrUnavailable) {
			cc.redirect(addr, "") // before unreachable: the leader is not forgotten
			cc.unreachable(n)
		} else if err == nil || errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, ErrBusy) {
			cc.answered(n)
		}
		cc.release(n)
		if err == nil {
			cc.redirect(addr, addr)
			return v, nil
		}
		last = err
		switch {
		case errors.Is(err, equeue.ErrNotLeader) && (repeatable || refusedNotLeader(err)):
			leader := namedLeader(err, addr)
			cc.redirect(addr, leader)
			if leader != "" && hops < 3 && ctx.Err() == nil {
				hops++ // follow at once, a few times in a row
				continue
			}
			hops = 0
		case errors.Is(err, ErrBusy):
			hops = 0
		case errors.Is(err, equeue.ErrIndeterminate) && repeatable:
			// The leader lost its leadership during the call's write:
			// like a lost connection, an unknown outcome of a call that is
			// safe to repeat. The next leader answers it. One sent to a
			// leader that held it until its deadline (ErrIndeterminate with
			// the context's error) forgets that leader, as below.
			hops = 0
			if errors.Is(err, context.DeadlineExceeded) {
				cc.redirect(addr, "")
			}
		case errors.Is(err, ErrUnavailable) && (repeatable || neverSent(err)):
			// A call that changes the engine goes to another node only
			// when it never left the client (connection refused): no
			// broker saw it.
			hops = 0
			cc.redirect(addr, "")
		default:
			if errors.Is(err, equeue.ErrNotLeader) {
				// The leader lost its leadership during the write (an
				// unknown outcome, not sent again): the next call goes to
				// the leader it names, or looks for one.
				cc.redirect(addr, namedLeader(err, addr))
			} else if errors.Is(err, ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) {
				// Unreachable, or too slow (a paused leader holds calls
				// until they time out): the next call asks the others.
				cc.redirect(addr, "")
			}
			return zero, err
		}
	}
}

// namedLeader is the leader err (from the node at addr) names, "" when it
// names none or addr itself.
func namedLeader(err error, addr string) string {
	var re *Error
	if errors.As(err, &re) && re.Leader != addr {
		return re.Leader
	}
	return ""
}

// refusedNotLeader reports whether err is a node's refusal as not the
// leader, which did nothing and may be sent to another node. An error
// that also matches equeue.ErrIndeterminate (a leader's write whose
// outcome is unknown after its tenure failed, wrapping the ErrNotLeader
// cause) is not: the write may be stored, and sending it again would store
// it twice.
func refusedNotLeader(err error) bool {
	return errors.Is(err, equeue.ErrNotLeader) && !errors.Is(err, equeue.ErrIndeterminate)
}

func onCluster0(ctx context.Context, cc *ClusterClient, repeatable bool, f func(*Client) error) error {
	_, err := onCluster(ctx, cc, repeatable, func(c *Client) (struct{}, error) { return struct{}{}, f(c) })
	return err
}

// Route returns a topic's queues, from the leader.
func (cc *ClusterClient) Route(ctx context.Context, topic string) (equeue.Route, error) {
	return onCluster(ctx, cc, true, func(c *Client) (equeue.Route, error) { return c.Route(ctx, topic) })
}

// Append stores messages on the cluster (see ClusterClient for retries).
func (cc *ClusterClient) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	return onCluster(ctx, cc, false, func(c *Client) (equeue.AppendResult, error) { return c.Append(ctx, req) })
}

// Pull reads from the leader.
func (cc *ClusterClient) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	return onCluster(ctx, cc, true, func(c *Client) (equeue.PullResult, error) { return c.Pull(ctx, req) })
}

// JoinGroup joins a group coordinated by the leader. Its error matches
// equeue.ErrJoinRefused only when no attempt may have added the member:
// a refusal after an attempt whose outcome is unknown (sent and not
// answered) is not one.
func (cc *ClusterClient) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	mayHaveJoined := false
	a, err := onCluster(ctx, cc, true, func(c *Client) (equeue.Assignment, error) {
		a, err := c.JoinGroup(ctx, req)
		if err != nil && !errors.Is(err, equeue.ErrJoinRefused) {
			mayHaveJoined = true
		}
		return a, err
	})
	if err != nil && mayHaveJoined {
		err = unrefused(err)
	}
	return a, err
}

// Heartbeat keeps a member alive on the leader.
func (cc *ClusterClient) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	return onCluster(ctx, cc, true, func(c *Client) (equeue.Assignment, error) { return c.Heartbeat(ctx, req) })
}

// LeaveGroup removes a member.
func (cc *ClusterClient) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	return onCluster0(ctx, cc, true, func(c *Client) error { return c.LeaveGroup(ctx, req) })
}

// ReleaseQueues gives up queues a member was asked to hand over.
func (cc *ClusterClient) ReleaseQueues(ctx context.Context, group, member string, queues []equeue.Grant) error {
	return onCluster0(ctx, cc, true, func(c *Client) error { return c.ReleaseQueues(ctx, group, member, queues) })
}

// CommitOffsets commits offsets on the leader.
func (cc *ClusterClient) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	return onCluster0(ctx, cc, true, func(c *Client) error { return c.CommitOffsets(ctx, req) })
}

// FetchOffsets returns committed offsets.
func (cc *ClusterClient) FetchOffsets(ctx context.Context, group, member string, queues []equeue.Grant) ([]equeue.OffsetCommit, error) {
	return onCluster(ctx, cc, true, func(c *Client) ([]equeue.OffsetCommit, error) {
		return c.FetchOffsets(ctx, group, member, queues)
	})
}

// SendBack stores a failed message in its group's retry or dead-letter
// topic (retried when the connection fails: a repeat stores nothing
// twice; see ClusterClient).
func (cc *ClusterClient) SendBack(ctx context.Context, req *equeue.SendBackRequest) (equeue.SendBackResult, error) {
	return onCluster(ctx, cc, true, func(c *Client) (equeue.SendBackResult, error) { return c.SendBack(ctx, req) })
}

// OnLeader runs f with the leader's client, following the leader and
// retrying through elections as other calls do — for admin calls (Admin)
// that are safe to repeat. The *Client is valid only while f runs: the
// ClusterClient closes a leader's client once no call uses it, so f must
// not keep it, or start work on it that outlives f.
func (cc *ClusterClient) OnLeader(ctx context.Context, f func(*Client) error) error {
	return onCluster0(ctx, cc, true, f)
}
