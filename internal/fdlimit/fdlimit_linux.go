package fdlimit

import (
	"errors"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// mu orders the calls that lower the limit: one finding the lowest free
// descriptor while another holds a probe open would find a higher one.
var mu sync.Mutex

// Save records the current open-files limit and returns what sets it back
// (failing t if that fails); a cleanup of t sets it back too, for a test
// that fails before it calls restore.
func Save(t testing.TB) (restore func()) {
	t.Helper()
	var limit syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit))
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit) })
	return func() {
		t.Helper()
		require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit))
	}
}

// Shut lowers the limit to the lowest free descriptor: no file opens
// until one below it is closed. Called again, it lowers the limit to a
// hole that a close made since. It never raises the limit: give it back
// with the restore of Save.
func Shut(t testing.TB) {
	t.Helper()
	Leave(t, 0)
}

// Leave lowers the limit so that exactly room descriptors are free below
// it, wherever they are (holes included): the limit is the (room+1)-th
// lowest free descriptor. A negative room sets the limit that many below
// the lowest free descriptor, every one under which is taken: opens fail
// until more than -room of those are closed. Leave never raises the limit:
// when fewer than room are free below it, it reports an error. It may be
// called from any goroutine: it reports errors with t.Errorf, leaving the
// limit as it found it, and returns.
func Leave(t testing.TB, room int) {
	t.Helper()
	mu.Lock()
	defer mu.Unlock()
	var limit syscall.Rlimit
	if !assert.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit)) {
		return
	}
	// Probes take the lowest free descriptors one after another, without
	// opening a file; all are closed again before the limit is set.
	probes := make([]int, 0, max(room, 0)+1)
	defer func() { // on a failure too
		for _, fd := range probes {
			_ = syscall.Close(fd)
		}
	}()
	next := limit.Cur // the limit itself when none is free below it
	for len(probes) <= max(room, 0) {
		fd, err := syscall.Dup(syscall.Stderr)
		if errors.Is(err, syscall.EMFILE) {
			if !assert.LessOrEqual(t, room, len(probes), "fewer than %d descriptors free below the limit", room) {
				return
			}
			next = limit.Cur // exactly room free below it
			break
		}
		if !assert.NoError(t, err) {
			return
		}
		probes = append(probes, fd)
		next = uint64(fd)
	}
	if short := uint64(-min(room, 0)); short > 0 {
		next -= min(short, next)
	}
	for len(probes) > 0 {
		fd := probes[len(probes)-1]
		probes = probes[:len(probes)-1]
		if !assert.NoError(t, syscall.Close(fd)) {
			return
		}
	}
	if next < limit.Cur {
		limit.Cur = next
		assert.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &limit))
	}
}
