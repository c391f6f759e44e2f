package remote

import (
	"sync"
	"sync/atomic"
)

// callGate counts a client's AppendAsync calls in progress, so that Close
// can wait for them: a call waiting for a window slot when Close starts
// reports equeue.ErrClosed before Close returns, never after. Two atomic
// additions per call, no lock.
type callGate struct {
	// state is gateClosed once close ran, plus the calls in progress.
	state   atomic.Int64
	once    sync.Once
	drained chan struct{} // closed once closed with no call in progress
}

// gateClosed is the bit of callGate.state set by close.
const gateClosed = 1 << 62

func newCallGate() *callGate {
	return &callGate{drained: make(chan struct{})}
}

// enter counts a call in progress; false once close ran (the call then
// reports equeue.ErrClosed itself, and does not call leave).
func (g *callGate) enter() bool {
	if g.state.Add(1)&gateClosed != 0 {
		g.leave()
		return false
	}
	return true
}

// leave ends a call entered.
func (g *callGate) leave() {
	if g.state.Add(-1) == gateClosed {
		g.once.Do(func() { close(g.drained) })
	}
}

// close refuses later calls; call it once.
func (g *callGate) close() {
	if g.state.Add(gateClosed) == gateClosed {
		g.once.Do(func() { close(g.drained) })
	}
}

// wait returns once close ran and no call is in progress.
func (g *callGate) wait() {
	if hook := testHookGateWait.Load(); hook != nil {
		(*hook)(g)
	}
	<-g.drained
}

// testHookGateWait, when set by a test, runs when a wait for g's calls
// begins (atomic as testHookBeforeBatch): a callback that blocks until
// then, or until Close returned, tells whether Close waits for it.
var testHookGateWait atomic.Pointer[func(g *callGate)]
