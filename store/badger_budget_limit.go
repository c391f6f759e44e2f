package store

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// noGoMemoryLimit is what debug.SetMemoryLimit reports when the process has
// no limit.
const noGoMemoryLimit = math.MaxInt64

// goLimit is the soft Go memory limit that the open stores with a positive
// GoMemoryLimit set for the process. The limit is process-wide, so it is
// shared: the first such store measures the Go memory the process uses
// (base) and sets base plus its share; each further one adds its share,
// each Close takes its share back, and the last one removes the limit. The
// stores hold it only while it is theirs: if the host sets a limit of its
// own meanwhile (debug.SetMemoryLimit), they leave it alone from then on.
var goLimit struct {
	mu sync.Mutex
	// gen counts the times stores took the limit over from a process that
	// had none; a release of an earlier generation does nothing.
	gen uint64
	// base is the Go memory in use when this generation started; shares
	// the sum of the shares of the stores holding it; set the limit they
	// set (0: none).
	base, shares, set int64
}

// acquireGoMemoryLimit adds share bytes to the soft Go memory limit that
// stores set, unless share is not positive or the host has a limit of its
// own (GOMEMLIMIT in the environment, even "off", or a limit set with
// debug.SetMemoryLimit). The returned function takes the share back; it may
// be called more than once.
func acquireGoMemoryLimit(share int64) (release func()) {
	if share <= 0 {
		return func() {}
	}
	l := &goLimit
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := debug.SetMemoryLimit(-1)
	if l.set == 0 || cur != l.set {
		// Stores hold no limit, or the host replaced theirs.
		if cur != noGoMemoryLimit || os.Getenv("GOMEMLIMIT") != "" {
			return func() {}
		}
		l.gen++
		l.base, l.shares = goMemoryInUse(), 0
	}
	l.shares += share
	l.set = l.base + l.shares
	debug.SetMemoryLimit(l.set)
	gen := l.gen
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			if gen != l.gen || l.set == 0 || debug.SetMemoryLimit(-1) != l.set {
				return // the host's limit now
			}
			l.shares -= share
			if l.shares <= 0 {
				l.shares, l.set = 0, 0
				debug.SetMemoryLimit(noGoMemoryLimit)
				return
			}
			l.set = l.base + l.shares
			debug.SetMemoryLimit(l.set)
		})
	}
}

// goMemoryInUse returns the memory the Go runtime holds from the OS and
// counts against its memory limit: all it mapped less the heap it released.
func goMemoryInUse() int64 {
	s := []metrics.Sample{
		{Name: "/memory/classes/total:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(s)
	var v [2]int64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = int64(s[i].Value.Uint64())
		}
	}
	return max(v[0]-v[1], 0)
}
