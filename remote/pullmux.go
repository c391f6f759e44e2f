package remote

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// pullMux coalesces the concurrent long-poll pulls of one Client into one
// PullMany call at a time, so a client's consumers cost the server one
// waiting call, not one per queue. A pull that arrives, or is cancelled,
// while a call is out cancels that call and a new one covers every pull
// still waiting (pulls only read, so nothing is lost).
type pullMux struct {
	c       *Client
	mu      sync.Mutex
	wait    []*muxPull // pulls not answered yet
	started bool       // the loop runs (from the first pull on)
	kick    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
}

type muxPull struct {
	ctx context.Context
	req *pb.PullRequest
	res chan muxResult // buffered: the loop never blocks on it
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
		close(m.stop)
		m.mu.Lock()
		started := m.started
		m.mu.Unlock()
		if started {
			<-m.done
		}
	})
}

func (m *pullMux) poke() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}

// pull queues req and waits for its answer.
func (m *pullMux) pull(ctx context.Context, req *pb.PullRequest) (*pb.PullResponse, error) {
	p := &muxPull{ctx: ctx, req: req, res: make(chan muxResult, 1)}
	m.mu.Lock()
	select {
	case <-m.stop:
		m.mu.Unlock()
		return nil, equeue.ErrClosed
	default:
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
			if !m.round(batch) {
				m.failAll(equeue.ErrClosed)
				return
			}
		}
	}
}

// round makes one PullMany call for batch; false when the client closes.
// A kick (a new or cancelled pull) cancels the call; the next round asks
// again for every pull still waiting.
func (m *pullMux) round(batch []*muxPull) bool {
	wait := time.Duration(math.MaxInt64)
	in := &pb.PullManyRequest{Pulls: make([]*pb.PullRequest, len(batch)), MaxAnswerBytes: int32(min(m.c.maxAnswer, math.MaxInt32))}
	for i, p := range batch {
		in.Pulls[i] = p.req
		wait = min(wait, p.req.GetWait().AsDuration())
	}
	in.Wait = durationPB(wait)
	ctx, cancel := context.WithTimeout(context.Background(), wait+longPollSlack)
	defer cancel()
	type answer struct {
		resp *pb.PullManyResponse
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := m.c.api.PullMany(ctx, in)
		got <- answer{resp, err}
	}()
	var a answer
	select {
	case a = <-got:
	case <-m.kick:
		cancel()
		a = <-got
		if a.err != nil {
			return true // cancelled for a new batch
		}
	case <-m.stop:
		cancel()
		<-got
		return false
	}
	if a.err != nil {
		err := m.c.fail(a.err)
		for _, p := range batch {
			m.answered(p, muxResult{err: err})
		}
		return true
	}
	items := a.resp.GetItems()
	if len(items) != len(batch) {
		err := fmt.Errorf("remote: broker returned %d pull answers for %d pulls", len(items), len(batch))
		for _, p := range batch {
			m.answered(p, muxResult{err: err})
		}
		return true
	}
	for i, p := range batch {
		if pe := items[i].GetError(); pe != nil {
			m.answered(p, muxResult{err: pullErrorFromPB(pe)})
		} else {
			m.answered(p, muxResult{resp: items[i].GetResponse()})
		}
	}
	return true
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
