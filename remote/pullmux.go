package remote

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// pullMux coalesces the concurrent long-poll pulls of one Client into one
// PullMany call at a time, so a client's consumers cost the server one
// waiting call, not one per queue. A pull that arrives, or is cancelled,
// while a call is out cancels that call and a new one covers every pull
// still waiting (pulls only read, so nothing is lost). A call waits as
// long as the shortest wait of its pulls. When it comes back, only the
// pulls it has something for, and those whose own wait has ended, are
// answered (all of them when the broker tells that its MaxPullWait ended
// the call's wait: mdPullCapped): the others keep waiting, in the next call, until their own
// wait ends, so one message does not send every idle pull of the client
// round the loop again, and a pull with a short wait does not answer one
// with a long wait "no new message" early. A pull the broker put off for
// want of room in an answer that found nothing (mdPullLater) is asked next
// in a call of its own, without waiting: asked again with the others, it
// would be put off again, at once, until their waits ended. The call carries at most maxPullMany pulls, the
// most the broker takes in one: a pull beyond them is a Pull call of its
// own (Client.waitPull).
type pullMux struct {
	c       *Client
	mu      sync.Mutex
	wait    []*muxPull // pulls not answered yet
	started bool       // the loop runs (from the first pull on)
	// call cancels the PullMany in flight, nil between calls; kicked says
	// it was cancelled for a new or cancelled pull.
	call   context.CancelFunc
	kicked bool
	kick   chan struct{} // wakes the loop between calls
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
}

type muxPull struct {
	ctx      context.Context
	req      *pb.PullRequest
	start    time.Time      // when the pull was queued
	deadline time.Time      // when the pull's own wait ends
	res      chan muxResult // buffered: the loop never blocks on it
	// alone says the broker put the pull off for want of room
	// (mdPullLater): the next call carries it alone. Only the loop reads
	// and writes it.
	alone bool
}

type muxResult struct {
	resp *pb.PullResponse
	err  error
}

func newPullMux(c *Client) *pullMux {
	return &pullMux{c: c, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// close ends the loop, answering waiting pulls with ErrClosed. Idempotent.
func (m *pullMux) close() {
	m.once.Do(func() {
		m.mu.Lock()
		close(m.stop)
		if m.call != nil {
			m.call()
		}
		started := m.started
		m.mu.Unlock()
		if started {
			<-m.done
		}
	})
}

// poke tells the loop that the waiting pulls changed: it cancels the call
// in flight, whose pulls the next call asks again, or wakes the loop.
func (m *pullMux) poke() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.call != nil {
		m.kicked = true
		m.call()
		m.call = nil
		return
	}
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// errMuxFull is pullMux.pull's answer when maxPullMany pulls wait
// already: nothing was asked, and the caller pulls on its own.
var errMuxFull = errors.New("remote: the client's PullMany call is full")

// waitPull is a group member's long-poll: it joins the client's PullMany
// call, or, when that carries maxPullMany pulls already (the most the
// broker takes in one), is a Pull call of its own. Its wait counts within
// the engine's MaxPullWait when an answer told it (withinCap): the broker
// answers a pull by then, as in process, whereas the shared call would
// ask again for a pull whose own wait has not ended. Each PullMany call
// is bounded by its own wait (see round); a pull without a deadline of
// its own, which may span several calls up to its own wait, waits no
// longer than that wait plus the slack from now.
func (c *Client) waitPull(ctx context.Context, in *pb.PullRequest) (equeue.PullResult, error) {
	in.Wait = durationPB(c.withinCap(in.GetWait().AsDuration()))
	mctx, cancel := longPollWithin(ctx, in.GetWait().AsDuration(), c.pollSlack())
	resp, err := c.mux.pull(mctx, in)
	cancel()
	switch {
	case errors.Is(err, errMuxFull):
		return c.pullCall(ctx, in)
	case err != nil:
		return equeue.PullResult{}, err
	}
	return pullResultFromPB(resp)
}

// pull queues req and waits for its answer. It answers errMuxFull at once
// when maxPullMany pulls wait already.
func (m *pullMux) pull(ctx context.Context, req *pb.PullRequest) (*pb.PullResponse, error) {
	now := time.Now()
	p := &muxPull{ctx: ctx, req: req, start: now, deadline: now.Add(req.GetWait().AsDuration()), res: make(chan muxResult, 1)}
	m.mu.Lock()
	select {
	case <-m.stop:
		m.mu.Unlock()
		return nil, equeue.ErrClosed
	default:
	}
	if len(m.wait) >= maxPullMany {
		m.mu.Unlock()
		return nil, errMuxFull
	}
	m.wait = append(m.wait, p)
	if !m.started {
		m.started = true
		go m.loop()
	}
	m.mu.Unlock()
	m.poke()
	select {
	case r := <-p.res:
		return r.resp, r.err
	case <-ctx.Done():
		m.poke() // the loop drops it from the next call
		select {
		case r := <-p.res:
			return r.resp, r.err
		default:
			return nil, ctx.Err()
		}
	}
}

// take returns the pulls still wanted, dropping those whose callers left.
func (m *pullMux) take() []*muxPull {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := m.wait[:0]
	for _, p := range m.wait {
		if p.ctx.Err() == nil {
			live = append(live, p)
		}
	}
	clear(m.wait[len(live):])
	m.wait = live
	return append([]*muxPull(nil), live...)
}

// answered removes p from the waiting pulls and hands it r.
func (m *pullMux) answered(p *muxPull, r muxResult) {
	m.mu.Lock()
	for i, w := range m.wait {
		if w == p {
			m.wait = append(m.wait[:i], m.wait[i+1:]...)
			break
		}
	}
	m.mu.Unlock()
	p.res <- r
}

func (m *pullMux) loop() {
	defer close(m.done)
	for {
		select {
		case <-m.stop:
			m.failAll(equeue.ErrClosed)
			return
		case <-m.kick:
		}
		for {
			batch := m.take()
			if len(batch) == 0 {
				break
			}
			waiting := len(batch)
			if p := firstAlone(batch); p != nil {
				batch = []*muxPull{p}
			}
			answered, ok := m.round(batch)
			if !ok {
				m.failAll(equeue.ErrClosed)
				return
			}
			if answered > 0 && !m.settle(waiting) {
				m.failAll(equeue.ErrClosed)
				return
			}
		}
	}
}

// settleTime is how long the loop, after answering pulls of a call, waits
// for their callers to pull again before the next call, so that it need
// not cancel that call at once to add them.
const settleTime = 2 * time.Millisecond

// settle waits until as many pulls wait as the last call carried, or
// settleTime; false when the client closes.
func (m *pullMux) settle(want int) bool {
	t := time.NewTimer(settleTime)
	defer t.Stop()
	for {
		m.mu.Lock()
		n := len(m.wait)
		m.mu.Unlock()
		if n >= want {
			return true
		}
		select {
		case <-m.kick:
		case <-t.C:
			return true
		case <-m.stop:
			return false
		}
	}
}

// firstAlone returns the first pull of batch the broker put off
// (muxPull.alone), or nil.
func firstAlone(batch []*muxPull) *muxPull {
	for _, p := range batch {
		if p.alone {
			return p
		}
	}
	return nil
}

// round makes one PullMany call for batch; ok is false when the client
// closes, answered counts the pulls it answered (with messages, an error,
// or "no new message" once their wait ended). A pull answered "no new message" before its own wait
// ended stays waiting, for the next round, unless the broker told that its
// cap ended the call's wait (mdPullCapped); one the broker told it put off
// (mdPullLater) is marked to go alone next. A call of a pull put off does
// not wait: its message, if any, is there already, and the pull is asked
// with the others again next. A kick (a new or cancelled pull) cancels the call; the
// next round asks again for every pull still waiting.
func (m *pullMux) round(batch []*muxPull) (answered int, ok bool) {
	wait := time.Duration(math.MaxInt64)
	in := &pb.PullManyRequest{Pulls: make([]*pb.PullRequest, len(batch)), MaxAnswerBytes: int32(min(m.c.maxAnswer, math.MaxInt32))}
	now := time.Now()
	for i, p := range batch {
		in.Pulls[i] = p.req
		wait = min(wait, m.due(p).Sub(now))
	}
	wait = max(wait, 0)
	if len(batch) == 1 && batch[0].alone {
		wait = 0
	}
	in.Wait = durationPB(wait)
	// Bounded from now by its wait within the engine's cap: a broker that
	// caps a longer wait answers by its cap.
	ctx, cancel := context.WithTimeout(context.Background(), m.c.callBound(wait))
	defer cancel()
	// The call runs on the loop's goroutine; poke and close cancel it.
	m.mu.Lock()
	select {
	case <-m.stop:
		m.mu.Unlock()
		return 0, false
	case <-m.kick: // the pulls changed since take: take them again
		m.mu.Unlock()
		return 0, true
	default:
	}
	m.call, m.kicked = cancel, false
	m.mu.Unlock()
	var header metadata.MD
	resp, err := m.c.api.PullMany(ctx, in, grpc.Header(&header))
	m.mu.Lock()
	m.call = nil
	kicked := m.kicked
	m.mu.Unlock()
	select {
	case <-m.stop:
		return 0, false
	default:
	}
	if err != nil && kicked {
		return 0, true // cancelled for a new batch
	}
	if err != nil {
		err := m.c.fail(err)
		for _, p := range batch {
			m.answered(p, muxResult{err: err})
		}
		return 0, true
	}
	items := resp.GetItems()
	if len(items) != len(batch) {
		err := fmt.Errorf("remote: broker returned %d pull answers for %d pulls", len(items), len(batch))
		for _, p := range batch {
			m.answered(p, muxResult{err: err})
		}
		return 0, true
	}
	now = time.Now()
	// The engine's cap ended the call's wait: every pull of it has waited
	// that long, and is answered with nothing, as in process.
	cut := capped(header)
	for _, p := range batch {
		p.alone = false
	}
	for _, i := range putOff(header, len(batch)) {
		batch[i].alone = true
	}
	for i, p := range batch {
		switch pe := items[i].GetError(); {
		case pe != nil:
			m.answered(p, muxResult{err: pullErrorFromPB(pe)})
		case idle(p, items[i]) && !cut && now.Before(m.due(p)):
			// Its own wait has not ended (the call's was the shortest
			// of its pulls', or another pull found something): the next
			// call carries it.
			continue
		default:
			m.answered(p, muxResult{resp: items[i].GetResponse()})
		}
		answered++
	}
	return answered, true
}

// due is when p's wait ends: its own deadline, or, when an answer told
// the engine's MaxPullWait (also one that came after p was queued, which
// waitPull could not cap: the client had just connected, or reconnected
// and forgot the cap), that cap after p was queued, whichever comes
// first. The broker answers p with nothing by then, as in process.
func (m *pullMux) due(p *muxPull) time.Time {
	if limit := m.c.told.maxPullWait(); limit > 0 {
		if capped := p.start.Add(limit); capped.Before(p.deadline) {
			return capped
		}
	}
	return p.deadline
}

// idle reports whether item answers p with nothing: no message, no error,
// the offset unchanged.
func idle(p *muxPull, item *pb.PullManyItem) bool {
	r := item.GetResponse()
	return item.GetError() == nil && r.GetStatus() == pb.PullStatus_PULL_STATUS_NO_NEW_MESSAGE &&
		len(r.GetMessages()) == 0 && r.GetNextOffset() == p.req.GetOffset()
}

func (m *pullMux) failAll(err error) {
	m.mu.Lock()
	ps := m.wait
	m.wait = nil
	m.mu.Unlock()
	for _, p := range ps {
		p.res <- muxResult{err: err}
	}
}
