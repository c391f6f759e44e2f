package store

import (
	"os"
	"path/filepath"
	"time"
)

// defaultReleaseMapped is the ReleaseMappedEvery a memory budget sets.
const defaultReleaseMapped = time.Second

// mappedRelease runs the goroutine that gives the pages of the store's
// memory-mapped files back to the OS (BadgerOptions.ReleaseMappedEvery).
type mappedRelease struct {
	stop chan struct{}
	done chan struct{}
}

// startRelease starts the releasing goroutine if every is positive and the
// store has files; stopRelease ends it.
func (s *Badger) startRelease(every time.Duration) {
	if every <= 0 || s.inMemory {
		return
	}
	dir := s.dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	// The kernel lists mapped files by their real path.
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	r := &mappedRelease{stop: make(chan struct{}), done: make(chan struct{})}
	s.mapped = r
	go r.run(dir+string(os.PathSeparator), every)
}

func (s *Badger) stopRelease() {
	if s.mapped == nil {
		return
	}
	close(s.mapped.stop)
	<-s.mapped.done
}

// run releases the mapped files under dir (releaseMapped) every interval,
// busy or not: Badger's compactions read and write whole tables through
// memory maps, so a large write leaves as much resident as it compacts, and
// it keeps compacting for a while after the last write. A release costs a
// read of the process's memory map list and one madvise per mapped file.
func (r *mappedRelease) run(dir string, every time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			return
		case <-t.C:
			releaseMapped(dir)
		}
	}
}
