package equeue

import "sync"

// memberGate holds an orderly clustering consumer's queues while its
// membership is in doubt: from a heartbeat (or rejoin) that failed until
// one that succeeds. Meanwhile the engine may have expired the member, as
// a network partition keeps its heartbeats away, and granted its queues
// to another member, which the cut-off member cannot hear; going on with
// the messages it had pulled would then run a queue on two members at
// once, and its messages out of order across them. So its queues begin
// no new message (nor an in-place retry) until a heartbeat confirms the
// membership again, or the engine answers that it expired (the queues
// are then fenced and dropped, see runMembership's lost). The zero value
// is confirmed.
type memberGate struct {
	mu    sync.Mutex
	doubt chan struct{} // set while in doubt; closed when confirmed again
}

// set records whether the membership was just confirmed (a heartbeat or
// join succeeded) or is in doubt (one failed).
func (g *memberGate) set(confirmed bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case confirmed && g.doubt != nil:
		close(g.doubt)
		g.doubt = nil
	case !confirmed && g.doubt == nil:
		g.doubt = make(chan struct{})
	}
}

// wait returns true once the membership is confirmed (at once when it
// is), false when stop is closed first.
func (g *memberGate) wait(stop <-chan struct{}) bool {
	g.mu.Lock()
	doubt := g.doubt
	g.mu.Unlock()
	if doubt == nil {
		return true
	}
	select {
	case <-doubt:
		return true
	case <-stop:
		return false
	}
}
