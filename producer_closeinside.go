package equeue

import (
	"slices"
	"sync"

	"github.com/equeue-go/equeue/internal/goid"
)

// Close may be called from the user's code that a send runs: its hooks
// and its QueueSelector. A Close that waited there for every send would
// wait for ever for the one that called it, so a send is counted for
// Close to wait for (p.async) only once its BeforeSend hooks and first
// pick returned on the caller's goroutine, and once Close began it is not
// counted any more but ends with ErrClosed (Producer.SendAsync). The
// user's code that runs after that runs on the producer's own goroutines:
// the AfterSend hooks (and trace ends), one send after another on the
// completions goroutine, and the selector asked again for a SendAsync
// retried on a fresh route. Called there, Close tells its goroutine by
// its ID (closeFromInside) and waits only until the broker answered the
// sends in flight (p.pending), not for their hooks, which run after the
// calling one, nor for the send it was called for.

// picker is a goroutine of the producer's picking a queue for a SendAsync
// on a fresh route: a window goroutine (sendInWindow) or one retrying the
// sends that met a stale route (runRouteRetries, retry set).
type picker struct {
	gid   uint64 // its goroutine's ID (goid.ID)
	retry bool
	// detached is set, under pickers.mu, once the selector called Close:
	// its send's count in p.pending ended then, and it ends with
	// ErrClosed, not sent.
	detached bool
}

// pickers are the producer's goroutines picking a queue now.
type pickers struct {
	mu sync.Mutex
	in []*picker
}

// enter registers pk while it picks a queue; it reads pk's goroutine ID
// the first time.
func (s *pickers) enter(pk *picker) *picker {
	if pk.gid == 0 {
		pk.gid = goid.ID()
	}
	s.mu.Lock()
	s.in = append(s.in, pk)
	s.mu.Unlock()
	return pk
}

// leave ends pk's pick and reports whether a Close from it detached it.
func (s *pickers) leave(pk *picker) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.in = slices.DeleteFunc(s.in, func(x *picker) bool { return x == pk })
	d := pk.detached
	pk.detached = false
	return d
}

// closeFromInside is the part of Close that tells whether it was called
// on one of p's goroutines running the user's code: the completions
// goroutine (a hook), or a picker (the selector), which it detaches from
// its send (closeFromPicker). Close then waits for p.pending alone.
func (p *Producer) closeFromInside() bool {
	gid := goid.ID()
	if gid == 0 {
		return false
	}
	return p.completions.runs(gid) || p.closeFromPicker(gid)
}

// closeFromPicker detaches the picker running on goroutine gid, if any:
// its send's count in p.pending ends now (the Close that its selector
// called must not wait for it), and a retrying goroutine hands its queue
// to a new one. Called again from the same selector, it changes nothing.
func (p *Producer) closeFromPicker(gid uint64) bool {
	s := &p.pickers
	s.mu.Lock()
	i := slices.IndexFunc(s.in, func(x *picker) bool { return x.gid == gid })
	if i < 0 {
		s.mu.Unlock()
		return false
	}
	pk := s.in[i]
	first := !pk.detached
	pk.detached = true
	s.mu.Unlock()
	if first {
		p.pending.Done()
		if pk.retry {
			p.handOffRetries()
		}
	}
	return true
}
