package store

import "sync"

// A value-log GC round moves a file's live values through the memtables
// and deletes the file once the store's sync of them returns (gcRound).
// When that sync stopped before its fsyncs (ErrSyncIncomplete: the
// memtable logs could not be listed or opened), the moved values are in
// logs no fsync reached, and the file is their only synced copy. The
// round then keeps its iterator open, which keeps Badger from deleting
// the file, until a later Sync succeeds: Sync, Reclaim (before another
// round) and Close sync the store again and let it go. A Restore syncs
// too before it drops anything, and is refused while that sync fails: let
// go before a drop that failed, the file would be gone with the store
// still holding the values moved out of it. A Close whose sync fails does
// not let it go: Badger would delete the file before its close has
// written the memtables out, and a crash in between would find neither
// copy. The round's iterator is then left open for good (closing it once
// Badger is closed would wait forever on the file's lock), which keeps
// the memtables it pins in memory and their logs open, and on disk until
// the next open replays them; the file is taken by a later GC round.

// heldRounds are the releases of the GC rounds kept open.
type heldRounds struct {
	// releasing is held by releaseHeld and syncLetsGo from taking the
	// releases to running them: a Restore's release waits for a Sync's
	// to end before it drops every file. Run after the drop, the Sync's
	// would have Badger delete the emptied file by its number, which
	// then names the fresh value-log file the snapshot is loaded into.
	releasing sync.Mutex
	mu        sync.Mutex
	dones     []func()
}

// add keeps done, the release of a round, until releaseHeld.
func (h *heldRounds) add(done func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dones = append(h.dones, done)
}

// take returns the releases kept and forgets them.
func (h *heldRounds) take() []func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	dones := h.dones
	h.dones = nil
	return dones
}

// putBack keeps dones again, after a sync that could not release them.
func (h *heldRounds) putBack(dones []func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dones = append(dones, h.dones...)
}

// any reports whether a round is held.
func (h *heldRounds) any() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.dones) > 0
}

// releaseHeld lets the files of the held GC rounds go once a Badger Sync,
// begun after they were taken, and the flush of the memtable logs
// succeeded (syncAll); its error is returned and the rounds stay held
// otherwise. With no round held it does nothing, and makes no sync. On a
// store without a memtable (badger_unusable.go) the sync fails with
// ErrUnusable, and the rounds stay held: a Close then keeps their files.
// Reclaim, Restore and Close call it.
func (s *Badger) releaseHeld() error {
	s.held.releasing.Lock()
	defer s.held.releasing.Unlock()
	if !s.held.any() {
		return nil
	}
	return s.releaseAfter(s.syncAll)
}

// releaseAfter takes the held rounds, runs sync, a sync of the store, and
// lets them go once it succeeded. Call it with releasing held.
func (s *Badger) releaseAfter(sync func() error) error {
	dones := s.held.take()
	if err := sync(); err != nil {
		s.held.putBack(dones)
		return err
	}
	for _, done := range dones {
		done()
	}
	return nil
}

// syncLetsGo is Sync's work (syncLogs), letting the held rounds go when
// it succeeds. It needs no Badger Sync of its own for them, so the
// shortcut serves: a round is held only after its sync did Badger's
// Sync, which made the moved values in the value log and the active
// memtable's log durable, and then stopped short of flushing the logs set
// aside (ErrSyncIncomplete); that left the next Sync to list the logs
// (walSync.touch), and any Sync that succeeds flushes every log from the
// last look's newest on, which holds the rest of them. A Sync finding no
// round held, or another call letting them go, does its own work alone:
// Syncs do not wait for each other here.
func (s *Badger) syncLetsGo() error {
	if !s.held.any() || !s.held.releasing.TryLock() {
		return s.syncLogs()
	}
	defer s.held.releasing.Unlock()
	return s.releaseAfter(s.syncLogs)
}

// abandon forgets the rounds still held without letting their files go:
// Close, once its sync failed (see above).
func (h *heldRounds) abandon() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dones = nil
}
