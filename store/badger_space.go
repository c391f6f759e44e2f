package store

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"time"
)

// Free disk space. Badger writes its write-ahead logs and value logs
// through memory maps of files it creates sparse (truncated to their full
// size, no block allocated). When the file system has no block left for a
// page written through such a map, the kernel answers with SIGBUS, which a
// Go program cannot recover from: a full disk would kill the whole host
// process, and then every restart at its first write. So the store checks
// the file system's free space before it lets a write into Badger and
// refuses one that would leave less than BadgerOptions.MinFreeBytes with
// ErrNoSpace: nothing of it is stored, the engine stays up, and the caller
// may retry once space is freed.
//
// The reserve it keeps is for what Badger writes on its own once the write
// is in: the flush of full memtables to level-0 tables (ordinary file
// writes, which fail with ENOSPC instead of SIGBUS, but then block writes
// until they succeed) and a new memtable's log header. Writes that only
// record metadata or delete records (offset commits, retention, topic
// deletion) may use three quarters of the reserve, so consumers keep
// committing and deletions keep freeing space on a nearly full disk.
//
// The check costs a statfs call at most once a second while the free space
// is well above the reserve: between two calls the store counts down what
// it let in. Near the reserve (less than twice it free) every write calls
// statfs. Another process filling the disk between two checks can still
// take the last blocks; the reserve is the margin for that.

// ErrNoSpace is returned by a write that would leave the store's file
// system with less free space than BadgerOptions.MinFreeBytes. Nothing of
// the write is stored; it may be retried once space is freed.
var ErrNoSpace = errors.New("store: not enough free disk space")

// spaceRecheck bounds how long the store trusts its count of free space.
const spaceRecheck = time.Second

// spaceGuard decides whether a write may go into Badger.
type spaceGuard struct {
	dir     string
	reserve int64 // MinFreeBytes: 0 turns the guard off
	// free returns the bytes available to the process on dir's file
	// system (freeSpace when the store opens; tests replace it).
	free func(dir string) (int64, error)

	mu      sync.Mutex
	budget  int64     // bytes writes may still take before the next check
	checked time.Time // the last check; zero forces one
}

// newSpaceGuard returns the guard of a store in dir; reserve 0 (in memory,
// read-only or turned off) lets every write in.
func newSpaceGuard(dir string, reserve int64) *spaceGuard {
	return &spaceGuard{dir: dir, reserve: reserve, free: freeSpace}
}

// freeSpace is diskFree; tests replace it.
var freeSpace = diskFree

// checkOpenSpace refuses to open a store in dir for writing when less than
// the metadata writes' share of reserve is free: Badger's Open writes the
// headers of new log files through their memory maps, so on a full disk
// it would raise SIGBUS before any write of the store's could be refused.
// dir need not exist yet: its nearest existing parent is looked at.
func checkOpenSpace(dir string, reserve int64) error {
	if reserve <= 0 {
		return nil
	}
	at := dir
	free, err := freeSpace(at)
	for err != nil && errors.Is(err, fs.ErrNotExist) && filepath.Dir(at) != at {
		at = filepath.Dir(at)
		free, err = freeSpace(at)
	}
	if err != nil {
		return nil // not known: as admit does
	}
	if keep := reserve / 4; free < keep {
		return fmt.Errorf("%w: %d bytes free on the file system of %s, opening for writes needs %d (a quarter of BadgerOptions.MinFreeBytes); free space, or open read-only",
			ErrNoSpace, free, dir, keep)
	}
	return nil
}

// admit lets in a write that puts up to need bytes into Badger's logs, or
// returns an error matching ErrNoSpace. A write that only records metadata
// or deletes (records false) may use three quarters of the reserve.
func (g *spaceGuard) admit(need int64, records bool) error {
	return g.admitKeeping(need, records, false)
}

// admitKeeping is admit, with margin a part of the reserve kept free
// beyond it (Badger.Admit): half of it for a write with records, an
// eighth for metadata and deletions alone.
func (g *spaceGuard) admitKeeping(need int64, records, margin bool) error {
	if g == nil || g.reserve <= 0 {
		return nil
	}
	keep := g.reserve
	if !records {
		keep -= 3 * g.reserve / 4
	}
	var extra int64
	if margin {
		extra = g.reserve / 8
		if records {
			extra = g.reserve / 2
		}
	}
	keep += extra
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	// The budget counts down from the free space beyond the full reserve;
	// a write that keeps less needs a fresh look at the disk.
	if !g.checked.IsZero() && now.Sub(g.checked) < spaceRecheck && g.budget-need-extra >= 0 {
		if extra == 0 {
			g.budget -= need // Admit only asks: nothing goes in yet
		}
		return nil
	}
	free, err := g.free(g.dir)
	if err != nil {
		// The check itself failed: do not refuse writes for it.
		g.checked = time.Time{}
		return nil
	}
	g.checked = now
	g.budget = free - g.reserve
	if free < 2*g.reserve {
		g.checked = time.Time{} // near the reserve: look every time
	}
	if free-need < keep {
		return fmt.Errorf("%w: %d bytes free on the file system of %s, a write of up to %d would leave less than the %d kept free (BadgerOptions.MinFreeBytes)",
			ErrNoSpace, free, g.dir, need, keep)
	}
	if extra == 0 {
		g.budget -= need
	}
	return nil
}

// Admit reports whether a Write of b is admitted with a margin: it returns
// an error matching ErrNoSpace when the write would leave less than a
// margin beyond what Write itself keeps free (the reserve for a write with
// records, margin half the reserve; a quarter of it for metadata and
// deletions alone, margin an eighth, so offset commits and admin changes
// go on nearly as long as on a single engine).
// It writes nothing. A replicated store's leader asks it before it
// proposes a write that every node's store will have to take: refused
// there, the write is refused as not stored, while a node whose disk is
// fuller than the leader's by less than the margin still applies what the
// cluster committed.
func (s *Badger) Admit(b *Batch) error {
	if b == nil || len(b.Entries)+len(b.Meta) == 0 {
		return nil
	}
	return s.space.admitKeeping(writeNeed(b), len(b.Entries) > 0, true)
}

// writeNeed bounds the bytes a Write of b puts into Badger's logs: each
// value and key with Badger's entry header, rounded up to a page.
func writeNeed(b *Batch) int64 {
	const perEntry = 64 // key, header, checksum
	n := int64(4096)
	for i := range b.Entries {
		n += int64(len(b.Entries[i].Value)) + perEntry
	}
	for i := range b.Meta {
		n += int64(len(b.Meta[i].Key)+len(b.Meta[i].Value)) + perEntry
	}
	return n
}
