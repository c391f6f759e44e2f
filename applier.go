package equeue

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// applier applies a member's assignments beside its heartbeats (see
// runMembership): applying one calls the broker (ReleaseQueues of idle
// revoked queues, FetchOffsets of fresh grants), and such a call may take
// longer than the engine's session timeout (a FetchOffsets whose
// time-start fallback reads many records, a remote broker starved of
// CPU, a store sync held); a member that sent no heartbeat meanwhile
// would be expired and its group rebalanced. Assignments are applied one
// at a time, in the order they came: one that comes while another is
// being applied waits for it, and replaces one that waited before it
// (an assignment is the member's whole state, so the newest holds what
// the older one would have done). A failed apply is retried with backoff
// until it succeeds or a newer assignment replaces it. The member may ask
// for the newest assignment to be applied again (again): a queue it
// granted that the member was still handing over when that apply ran is
// started then. The goroutine
// that applies runs only while there is something to apply: an idle
// member holds none.
type applier struct {
	apply func(context.Context, Assignment) error
	log   *slog.Logger
	// parent is the membership's context; ctx, a child of it, is that of
	// the current generation, ended by reset and stop.
	parent context.Context
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// next is the assignment to apply next (the newest one that came, or
	// one to retry); nil when none.
	next *Assignment
	// last is the assignment applied last, or being applied; nil before
	// the first and after reset.
	last *Assignment
	// stopped is set from stop until reset ends: no goroutine starts.
	stopped bool
	// running is set while a goroutine applies or waits to retry.
	running bool
	// version is that of next, or else of the assignment being applied,
	// while running.
	version int64
	// newer wakes a goroutine waiting to retry a failed apply when a newer
	// assignment is posted: that one is applied at once, not after the
	// backoff meant for the one that failed.
	newer chan struct{}
	// minBackoff is the first wait before a failed apply is retried.
	minBackoff time.Duration
}

// newApplier returns an applier whose applies run under ctx.
func newApplier(ctx context.Context, apply func(context.Context, Assignment) error, log *slog.Logger) *applier {
	p := &applier{apply: apply, log: log, parent: ctx, newer: make(chan struct{}, 1), minBackoff: 100 * time.Millisecond}
	p.ctx, p.cancel = context.WithCancel(ctx)
	return p
}

// post hands over a to be applied after the one being applied, in place
// of any that waits.
func (p *applier) post(a Assignment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next = &a
	p.version = a.Version
	select {
	case p.newer <- struct{}{}:
	default:
	}
	if !p.running {
		p.running = true
		p.wg.Add(1)
		go p.run(p.ctx)
	}
}

// known is the assignment version a heartbeat tells the engine the
// member has: that of the newest assignment handed over while one is
// being applied or waits (so that the heartbeat long-polls instead of
// being answered at once with an assignment already on its way), else
// what applied says.
func (p *applier) known(applied func() int64) int64 {
	p.mu.Lock()
	if p.running {
		defer p.mu.Unlock()
		return p.version
	}
	p.mu.Unlock()
	return applied()
}

// again applies the assignment applied last once more, after the one
// under way (a queue it grants that was still being handed over when it
// was applied starts then), unless another assignment waits, whose apply
// does that. It does nothing before the first assignment and once
// stopped or reset. Safe to call from any goroutine.
func (p *applier) again() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped || p.last == nil || p.next != nil {
		return
	}
	p.next = p.last
	p.version = p.last.Version
	if !p.running {
		p.running = true
		p.wg.Add(1)
		go p.run(p.ctx)
	}
}

// reset drops what waits, cancels the apply under way and waits for it
// to return, so that the member can be reset (expired, rejoining) with
// nothing of its former assignments applied after. Called by the one
// goroutine that posts.
func (p *applier) reset() {
	p.stop()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopped = false
	p.next, p.last = nil, nil
	select { // a wake-up for what was just dropped
	case <-p.newer:
	default:
	}
	p.ctx, p.cancel = context.WithCancel(p.parent)
}

// stop cancels the apply under way and waits for the applying goroutine
// to end; nothing is applied after.
func (p *applier) stop() {
	p.mu.Lock()
	p.stopped = true // no again starts a goroutine past the Wait below
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
}

// run applies what was posted until nothing waits or ctx ends.
func (p *applier) run(ctx context.Context) {
	defer p.wg.Done()
	backoff := p.minBackoff
	for {
		p.mu.Lock()
		if p.next == nil || ctx.Err() != nil {
			p.running = false
			p.mu.Unlock()
			return
		}
		a := *p.next
		p.last = p.next
		p.next = nil
		p.mu.Unlock()
		err := p.apply(ctx, a)
		if err == nil || ctx.Err() != nil {
			backoff = p.minBackoff
			continue
		}
		p.mu.Lock()
		retry := p.next == nil
		if retry {
			p.next = &a // retry it, unless a newer one came meanwhile
			select {    // a wake-up from a post already taken
			case <-p.newer:
			default:
			}
		}
		p.mu.Unlock()
		if !retry { // a newer one came while this one was applied
			backoff = p.minBackoff
			continue
		}
		p.log.Warn("applying an assignment failed", "version", a.Version, "err", err, "retry_in", backoff)
		p.waitRetry(ctx, backoff)
		backoff = min(backoff*2, 5*time.Second)
	}
}

// waitRetry waits d before a failed apply is retried, or less: until ctx
// ends or a newer assignment is posted.
func (p *applier) waitRetry(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-p.newer:
	}
}
