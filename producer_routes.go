package equeue

import (
	"sync"
	"time"
)

// routeSweepMin is the least number of route lookups between two sweeps
// of a producer's expired routes (routeSweeper).
const routeSweepMin = 64

// routeSweeper drops a producer's expired routes now and then, so that a
// producer that lives for months and sends to topics made and deleted on
// the way (per job, per tenant) keeps the routes of the topics it sends to
// now, not of every topic it ever sent to. A sweep runs once the route
// lookups since the last one reach twice the routes that one left (at
// least routeSweepMin): its cost is paid for by the lookups, each a call
// to the broker already.
type routeSweeper struct {
	mu      sync.Mutex
	lookups int // since the last sweep
	at      int // lookups at which the next sweep runs; 0 means routeSweepMin
}

// looked counts one route lookup of p at now, and sweeps p's expired
// routes when it is time to.
func (s *routeSweeper) looked(p *Producer, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lookups++
	if s.lookups < max(s.at, routeSweepMin) {
		return
	}
	left := 0
	p.routes.Range(func(k, v any) bool {
		// Only the entry read here: a route stored since stays.
		if c := v.(*cachedRoute); !now.Before(c.exp) && p.routes.CompareAndDelete(k, v) {
			return true
		}
		left++
		return true
	})
	s.lookups, s.at = 0, 2*left
}
