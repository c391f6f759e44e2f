package kafka

import "sync"

// commitGate orders a group's offset commits with the changes that hand
// its partitions to other members, as Kafka's coordinator does by checking
// and appending a commit under the group's lock. A commit enters the gate
// (shared) while the coordinator's lock is still held by its check, and
// leaves it once its store write returned; a change of owners (a classic
// group's new generation, a KIP-848 partition given to a member or freed
// by one leaving) waits, under the coordinator's lock, for the commits in
// the gate. A commit checked against the old owners thus never lands
// after one of the new owners': it would move the offset back.
//
// Only commits that passed their check under the coordinator's lock enter,
// and they take no lock of the coordinator before they leave, so waiting
// under it cannot deadlock; it holds up the coordinator for as long as a
// store write in flight takes, only at a change of owners.
type commitGate struct {
	mu sync.RWMutex
}

// enter admits a checked commit; the caller holds the coordinator's lock.
func (g *commitGate) enter() { g.mu.RLock() }

// leave ends a commit's store write.
func (g *commitGate) leave() { g.mu.RUnlock() }

// wait returns once the commits in the gate left it; the caller holds the
// coordinator's lock, so that none enters meanwhile.
func (g *commitGate) wait() {
	g.mu.Lock()
	//lint:ignore SA2001 an empty critical section is the point: a barrier
	g.mu.Unlock()
}

// awaited reports whether a wait is blocked by commits in the gate (for
// tests).
func (g *commitGate) awaited() bool {
	if g.mu.TryRLock() {
		g.mu.RUnlock()
		return false
	}
	return true
}
