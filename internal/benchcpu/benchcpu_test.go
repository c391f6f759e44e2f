package benchcpu

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CPU time grows with work done and not with time slept.
func TestProcess_CountsWorkNotSleep(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" || runtime.GOOS == "js" || runtime.GOOS == "wasip1" {
		_, ok := Process()
		assert.False(t, ok)
		return
	}
	start, ok := Process()
	require.True(t, ok)
	time.Sleep(50 * time.Millisecond)
	slept, _ := Process()
	// Busy work until it shows (however little of a core a loaded machine
	// gives this test): the count must move within a generous deadline.
	worked, x := slept, 0
	for deadline := time.Now().Add(30 * time.Second); worked-slept < 20*time.Millisecond && time.Now().Before(deadline); x++ {
		if x%1024 == 0 {
			worked, _ = Process()
		}
	}
	assert.Less(t, slept-start, 40*time.Millisecond, "sleeping used CPU")
	assert.GreaterOrEqual(t, worked-slept, 20*time.Millisecond, "busy work used no CPU")
}
