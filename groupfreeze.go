package equeue

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// groupFreeze lets listings and heartbeats read a group while its lock
// (g.mu) is held across a store write or read: the holder freezes the
// group first, promising to change none of its fields until it thaws it,
// and readers then read them under a shared hold instead of waiting for
// g.mu. A group is frozen only by the holder of g.mu.
type groupFreeze struct {
	// rw is held shared by each reader of the frozen group, and
	// exclusively to freeze or thaw it (a thaw waits for the readers).
	rw sync.RWMutex
	// frozen is set while g.mu's holder changes nothing; guarded by rw.
	frozen bool
	// wake, when not nil, is closed at the next freeze; guarded by rw.
	wake chan struct{}
	// thawed is closed at the thaw of the current freeze; guarded by rw.
	thawed chan struct{}
}

// freeze lets readers read g without g.mu until thaw. g.mu must be held,
// and g's fields left as they are until thaw.
func (g *group) freeze() {
	f := &g.fz
	f.rw.Lock()
	f.frozen = true
	f.thawed = make(chan struct{})
	w := f.wake
	f.wake = nil
	f.rw.Unlock()
	if w != nil {
		close(w)
	}
}

// thaw ends freeze, once the readers of the frozen group are done. g.mu
// must be held.
func (g *group) thaw() {
	f := &g.fz
	f.rw.Lock()
	f.frozen = false
	close(f.thawed)
	f.thawed = nil
	f.rw.Unlock()
}

// readLock makes g's fields readable: it locks g.mu and returns false or,
// while g.mu's holder has g frozen (see freeze), takes a shared hold of
// the frozen group and returns true: then the caller may change nothing
// but through atomics (member.seen), and must take no lock that g.mu may
// not be held under. Either way it ends with readUnlock(frozen).
func (g *group) readLock() (frozen bool) {
	f := &g.fz
	for {
		if g.mu.TryLock() {
			return false
		}
		f.rw.RLock()
		if f.frozen {
			return true
		}
		f.rw.RUnlock()
		f.rw.Lock()
		if f.frozen {
			f.rw.Unlock()
			continue
		}
		if f.wake == nil {
			f.wake = make(chan struct{})
		}
		wake := f.wake
		f.rw.Unlock()
		// Wait for g.mu or the next freeze, whichever comes first; a lock
		// taken for a caller that no longer waits is let go.
		locked, abandon := make(chan struct{}), make(chan struct{})
		go func() {
			g.mu.Lock()
			select {
			case locked <- struct{}{}:
			case <-abandon:
				g.mu.Unlock()
			}
		}()
		select {
		case <-locked:
			return false
		case <-wake:
			close(abandon)
		}
	}
}

// readUnlock ends readLock.
func (g *group) readUnlock(frozen bool) {
	if frozen {
		g.fz.rw.RUnlock()
		return
	}
	g.mu.Unlock()
}

// frozenHeartbeat answers a heartbeat of a frozen group, under readLock's
// shared hold, which it releases. The answer cannot change while g is
// frozen: a heartbeat that would wait for a change waits until deadline,
// and done is false if g thawed first (the caller then tries again).
func (e *Engine) frozenHeartbeat(ctx context.Context, g *group, req *HeartbeatRequest, deadline time.Time) (a Assignment, done bool, err error) {
	m := g.members[req.Member]
	if m == nil {
		g.readUnlock(true)
		return Assignment{}, true, fmt.Errorf("%w: %q in group %q", ErrNotMember, req.Member, req.Group)
	}
	if req.Incarnation != "" && m.incarnation != "" && m.incarnation != req.Incarnation {
		g.readUnlock(true)
		return Assignment{}, true, fmt.Errorf("%w: %q in group %q belongs to another incarnation", ErrNotMember, req.Member, req.Group)
	}
	m.seen(time.Now())
	a = g.assignment(req.Member, &e.opts)
	thawed := g.fz.thawed
	wait := m.version == req.KnownVersion && req.Wait > 0
	g.readUnlock(true)
	if !wait {
		return a, true, nil
	}
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-t.C:
		m.seen(time.Now())
		return a, true, nil
	case <-thawed:
		return Assignment{}, false, nil
	case <-ctx.Done():
		return Assignment{}, true, ctx.Err()
	case <-e.closing:
		return Assignment{}, true, ErrClosed
	}
}
