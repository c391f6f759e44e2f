package cluster

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// The leader writes its own Raft log while the entries replicate.
//
// hashicorp/raft's leader stores (and fsyncs) a group of entries before it
// sends them to the followers, who store (and fsync) them again before
// they answer: two fsyncs one after the other for every commit, and the
// leader's loop can do nothing else during the first. leaderLog lets the
// leader's write run alongside the replication instead (as the Raft thesis,
// §10.2.1, allows): while this node leads, StoreLogs hands the entries to
// a writer goroutine and returns, so Raft sends them at once.
//
// Raft then counts the leader's copy toward a majority before it is
// durable. Nothing may act on such a count until the leader's write is
// done, or an entry held durably by one node only could be applied and
// later lost (a machine crash of the leader before its fsync, with the
// other follower lacking it). So an entry counts as committed, for
// everything this node does with it, only once it is also stored here:
//
//   - the FSM applies an entry (and so answers the sender) only after
//     awaitStored covers it (fsm.go);
//   - the commit index the leader sends to followers is clamped to what is
//     stored here (storedBound, used by the transport in lag.go), so no
//     follower applies an entry that is durable on one node only;
//   - once this node does not lead, every call first waits for the writes
//     still on their way (drain): it never tells a new leader it holds
//     entries that are not yet stored, and it truncates or appends only
//     after them;
//   - configuration entries are stored synchronously, as Raft expects,
//     since Raft acts on their commitment itself.
//
// A failed background write makes every later call fail (the node must be
// reopened), and the entries it held are never applied. Raft learns of it
// from its next write, and steps down; the node makes one (node.go), so
// that a healthy node takes over.
type leaderLog struct {
	inner raft.LogStore // the log store (behind Raft's cache)
	// leading reports whether this node is Raft's leader; unset until Raft
	// runs (bootstrap and start-up write synchronously).
	leading atomic.Pointer[func() bool]

	mu      sync.Mutex
	cond    sync.Cond
	pending []*raft.Log // handed over by Raft, not yet stored, in index order
	err     error       // a failed background write, or errLogClosed
	closing bool
	done    chan struct{}
	// installed is the last entry of the snapshot Raft installed last,
	// until Raft stores entries again (snapinstall.go).
	installed logPoint
}

var errLogClosed = errors.New("cluster: raft log closed")

var _ raft.LogStore = (*leaderLog)(nil)

func newLeaderLog(inner raft.LogStore) *leaderLog {
	l := &leaderLog{inner: inner, done: make(chan struct{})}
	l.cond.L = &l.mu
	go l.run()
	return l
}

// run stores the pending entries, all that are waiting in one write, until
// Close.
func (l *leaderLog) run() {
	defer close(l.done)
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for len(l.pending) == 0 && !l.closing {
			l.cond.Wait()
		}
		if len(l.pending) == 0 || l.err != nil {
			if l.err == nil {
				l.err = errLogClosed
			}
			l.cond.Broadcast()
			return
		}
		batch := l.pending
		l.mu.Unlock()
		err := l.inner.StoreLogs(batch)
		l.mu.Lock()
		if err != nil {
			l.err = err
		} else {
			// Entries appended meanwhile follow batch; keep them without
			// the stored ones (raft owns the logs, so clear the pointers).
			rest := l.pending[len(batch):]
			clear(l.pending[:len(batch)])
			l.pending = rest
		}
		l.cond.Broadcast()
	}
}

// setLeading tells the log how to ask whether this node leads.
func (l *leaderLog) setLeading(f func() bool) { l.leading.Store(&f) }

// isLeading reports whether Raft is leading now.
func (l *leaderLog) isLeading() bool {
	f := l.leading.Load()
	return f != nil && (*f)()
}

// drain waits until every entry handed over so far is stored, and returns
// a background write's failure.
func (l *leaderLog) drain() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) == 0 {
		return l.failure()
	}
	return l.waitLocked(l.pending[len(l.pending)-1].Index)
}

// awaitStored waits until the entry at index (and every one before it) is
// stored. It fails if a background write failed or the log closed first.
func (l *leaderLog) awaitStored(index uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.waitLocked(index)
}

func (l *leaderLog) waitLocked(index uint64) error {
	for l.err == nil && len(l.pending) > 0 && l.pending[0].Index <= index {
		l.cond.Wait()
	}
	if len(l.pending) > 0 && l.pending[0].Index <= index {
		return l.err
	}
	return l.failure()
}

// failed returns a failed background write, or nil.
func (l *leaderLog) failed() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failure()
}

// failure is a failed background write (not a close: what is stored is).
func (l *leaderLog) failure() error {
	if errors.Is(l.err, errLogClosed) {
		return nil
	}
	return l.err
}

// storedBound clamps a commit index to the entries stored here.
func (l *leaderLog) storedBound(commit uint64) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) > 0 && l.pending[0].Index <= commit {
		return l.pending[0].Index - 1
	}
	return commit
}

// FirstIndex returns the first index written.
func (l *leaderLog) FirstIndex() (uint64, error) {
	first, err := l.inner.FirstIndex()
	if err != nil || first != 0 {
		return first, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.pending) > 0 {
		return l.pending[0].Index, nil
	}
	return 0, nil
}

// LastIndex returns the last index written.
func (l *leaderLog) LastIndex() (uint64, error) {
	l.mu.Lock()
	if n := len(l.pending); n > 0 {
		last := l.pending[n-1].Index
		l.mu.Unlock()
		return last, nil
	}
	l.mu.Unlock()
	return l.inner.LastIndex()
}

// GetLog reads an entry, from the pending ones first.
func (l *leaderLog) GetLog(index uint64, out *raft.Log) error {
	l.mu.Lock()
	if n := len(l.pending); n > 0 && index >= l.pending[0].Index && index <= l.pending[n-1].Index {
		*out = *l.pending[index-l.pending[0].Index]
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	if !l.isLeading() {
		// A follower checks the entries a leader sends against its own:
		// what it then claims to hold must be stored.
		if err := l.drain(); err != nil {
			return err
		}
		err := l.inner.GetLog(index, out)
		if errors.Is(err, raft.ErrLogNotFound) && l.pastInstalled(index, out) {
			return nil
		}
		return err
	}
	return l.inner.GetLog(index, out)
}

// StoreLog stores one entry.
func (l *leaderLog) StoreLog(log *raft.Log) error { return l.StoreLogs([]*raft.Log{log}) }

// StoreLogs hands entries to the background writer while this node leads,
// and stores them before it returns otherwise.
func (l *leaderLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	if l.isLeading() && !hasConfiguration(logs) {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err != nil {
			return l.err
		}
		l.pending = append(l.pending, logs...)
		l.installed = logPoint{}
		l.cond.Broadcast()
		return nil
	}
	if err := l.drain(); err != nil {
		return err
	}
	if err := l.inner.StoreLogs(logs); err != nil {
		return err
	}
	l.mu.Lock()
	l.installed = logPoint{}
	l.mu.Unlock()
	return nil
}

// DeleteRange deletes entries once every pending write is stored.
func (l *leaderLog) DeleteRange(min, max uint64) error {
	if err := l.drain(); err != nil {
		return err
	}
	return l.inner.DeleteRange(min, max)
}

// IsMonotonic passes on whether the log store refuses gaps.
func (l *leaderLog) IsMonotonic() bool {
	m, ok := l.inner.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// Close stores what is pending and stops the writer. Raft must be shut
// down first.
func (l *leaderLog) Close() error {
	l.mu.Lock()
	l.closing = true
	l.cond.Broadcast()
	l.mu.Unlock()
	<-l.done
	return l.failure()
}

// closerFunc is a Close method as an io.Closer.
type closerFunc func() error

func (f closerFunc) Close() error { return f() }

func hasConfiguration(logs []*raft.Log) bool {
	for _, e := range logs {
		if e.Type == raft.LogConfiguration {
			return true
		}
	}
	return false
}
