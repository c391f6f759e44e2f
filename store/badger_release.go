package store

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"time"
)

// defaultReleaseMapped is the ReleaseMappedEvery a memory budget sets.
const defaultReleaseMapped = time.Second

// idleFreeAfter is how long a store with FreeOSMemoryWhenIdle goes without
// writes before it returns the Go heap to the OS: long enough for Badger to
// finish its compactions and free its pooled table-builder buffers (one
// per 2 s, 8 at most). A variable so that tests can shorten it.
var idleFreeAfter = 20 * time.Second

// mappedRelease runs the goroutine that gives the pages of the store's
// memory-mapped files back to the OS (BadgerOptions.ReleaseMappedEvery),
// and with FreeOSMemoryWhenIdle the freed Go heap once the store is idle;
// it also holds the store's share of the soft Go memory limit
// (BadgerOptions.GoMemoryLimit).
type mappedRelease struct {
	stop chan struct{} // nil: no goroutine
	done chan struct{}
	// limit takes the store's share of the Go memory limit back.
	limit func()
}

// growthCheck is how often a store with ReleaseMappedAbove reads how much
// of the process's mapped files is resident while it is written (and for
// quietAfter after the last write); quietGrowthCheck is how often it does
// otherwise, which catches pages that reads fault in.
const (
	growthCheck      = 10 * time.Millisecond
	quietGrowthCheck = 250 * time.Millisecond
	quietAfter       = 20 * time.Second
)

// startRelease sets the store's share of the Go memory limit if
// o.GoMemoryLimit is positive, and starts the releasing goroutine if
// o.ReleaseMappedEvery is positive and the store has files; stopRelease
// undoes both.
func (s *Badger) startRelease(o BadgerOptions) {
	limit := acquireGoMemoryLimit(o.GoMemoryLimit)
	if o.ReleaseMappedEvery <= 0 || s.inMemory {
		if o.GoMemoryLimit > 0 {
			s.mapped = &mappedRelease{limit: limit}
		}
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
	var freeAfter time.Duration
	if o.FreeOSMemoryWhenIdle {
		freeAfter = idleFreeAfter
	}
	r := &mappedRelease{stop: make(chan struct{}), done: make(chan struct{}), limit: limit}
	s.mapped = r
	go s.runRelease(r, dir+string(os.PathSeparator), o.ReleaseMappedEvery, o.ReleaseMappedAbove, freeAfter)
}

func (s *Badger) stopRelease() {
	if s.mapped == nil {
		return
	}
	if s.mapped.stop != nil {
		close(s.mapped.stop)
		<-s.mapped.done
	}
	s.mapped.limit()
}

// runRelease releases the mapped files under dir (releaseMapped) every
// interval, busy or not: Badger's compactions read and write whole tables
// through memory maps, so a large write leaves as much resident as it
// compacts, and it keeps compacting for a while after the last write. A
// release costs a read of the process's memory map list and one madvise
// per mapped file. With above positive it also releases as soon as the
// process's resident mapped pages grew by above since the last release,
// or since the lowest point after it (a read of /proc/self/statm every
// growthCheck while writes come in, every quietGrowthCheck otherwise): a
// compaction writes tens of megabytes of tables in well under a second.
// With freeAfter positive, once no write ran or started for freeAfter it
// calls debug.FreeOSMemory, once per quiet period.
func (s *Badger) runRelease(r *mappedRelease, dir string, every time.Duration, above int64, freeAfter time.Duration) {
	defer close(r.done)
	t := time.NewTicker(every)
	defer t.Stop()
	floor := mappedResident()
	var grown <-chan time.Time
	growth := time.NewTicker(quietGrowthCheck)
	defer growth.Stop()
	if above > 0 && floor >= 0 {
		grown = growth.C
	} else {
		growth.Stop()
	}
	release := func() {
		releaseMapped(dir)
		if v := mappedResident(); v >= 0 {
			floor = v
		}
	}
	last, quietSince, freed, busy := s.writes.Load(), time.Now(), false, false
	// active notes writes since the last look and says how long the store
	// has been without them.
	active := func(now time.Time) time.Duration {
		if n := s.writes.Load(); n != last || s.writing.Load() > 0 {
			last, quietSince, freed = n, now, false
		}
		return now.Sub(quietSince)
	}
	for {
		select {
		case <-r.stop:
			return
		case now := <-grown:
			switch quiet := active(now); {
			case !busy && quiet == 0:
				busy = true
				growth.Reset(growthCheck)
			case busy && quiet >= quietAfter:
				busy = false
				growth.Reset(quietGrowthCheck)
			}
			// The floor follows mappings that went away (a closed
			// table, another file of the host's), so that growth is
			// counted from the lowest point since the last release.
			cur := mappedResident()
			if cur < 0 {
				continue
			}
			floor = min(floor, cur)
			if cur-floor >= above {
				release()
			}
		case now := <-t.C:
			release()
			if quiet := active(now); freeAfter > 0 && !freed && quiet >= freeAfter {
				debug.FreeOSMemory()
				freed = true
			}
		}
	}
}
