package cluster

import (
	"errors"
	"fmt"
	"sync"
	"time"
)

// A leader adding a node with another secret (AddVoter) waits out its
// context and removes the node again: Raft retries its calls, and says
// nothing of why they fail. The secure stream remembers, per address it
// dials, the last handshake the other end refused, so that AddVoter can
// say so (ErrPeerAuthFailed).

// maxRefusedDials bounds the addresses refusedDials remembers: Raft dials
// the servers of its configuration, a few.
const maxRefusedDials = 256

// refusedDials is, per address dialled, the last refused handshake since
// the last one that succeeded.
type refusedDials struct {
	mu   sync.Mutex
	last map[string]refusedDial
}

// refusedDial is a handshake the other end refused.
type refusedDial struct {
	at  time.Time
	err error
}

// note records the outcome of a handshake with addr: err, when the other
// end refused it (it said it refused the proof, or it does not speak this
// version); nil forgets a refusal. Other failures (a timeout, a
// connection reset or closed before the other end answered the proof, as
// one closed for room or by a node stopping is) say nothing of the
// secret, and are not noted.
func (d *refusedDials) note(addr string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case err == nil:
		delete(d.last, addr)
	case errors.Is(err, errProofRefused), errors.Is(err, errRaftVersion):
		if d.last == nil {
			d.last = map[string]refusedDial{}
		}
		if _, ok := d.last[addr]; !ok && len(d.last) >= maxRefusedDials {
			for a := range d.last {
				delete(d.last, a) // any one: a bound, not an order
				break
			}
		}
		d.last[addr] = refusedDial{at: time.Now(), err: err}
	}
}

// authFailure returns an error matching ErrPeerAuthFailed when the last
// handshake with addr, at since or later, was refused; nil otherwise.
func (s *secureStream) authFailure(addr string, since time.Time) error {
	s.dials.mu.Lock()
	defer s.dials.mu.Unlock()
	r, ok := s.dials.last[addr]
	if !ok || r.at.Before(since) {
		return nil
	}
	return fmt.Errorf("%w: %s: %w", ErrPeerAuthFailed, addr, r.err)
}
