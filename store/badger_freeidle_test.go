package store

import (
	"runtime/metrics"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// forcedGCs counts the garbage collections forced so far (runtime.GC,
// debug.FreeOSMemory).
func forcedGCs() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// With FreeOSMemoryWhenIdle a store that stops writing returns the Go heap
// to the OS (a forced collection), and does so again after the next write.
func TestBadgerFreeOSMemoryWhenIdle(t *testing.T) {
	old := idleFreeAfter
	idleFreeAfter = 50 * time.Millisecond
	t.Cleanup(func() { idleFreeAfter = old })

	s, err := OpenBadger(t.TempDir(), &BadgerOptions{ReleaseMappedEvery: 10 * time.Millisecond, FreeOSMemoryWhenIdle: true})
	require.NoError(t, err)
	defer s.Close()
	q := QueueID{Topic: 1}
	for round := range 2 {
		before := forcedGCs()
		fillSegments(t, s, q, 100*uint64(round+1), 100)
		require.Eventually(t, func() bool { return forcedGCs() > before }, 10*time.Second, 5*time.Millisecond,
			"round %d: no forced collection after the writes stopped", round)
	}
	require.NoError(t, s.Close())

	_, err = OpenBadger(t.TempDir(), &BadgerOptions{FreeOSMemoryWhenIdle: true})
	require.ErrorContains(t, err, "ReleaseMappedEvery", "freeing without the release loop would do nothing")
}
