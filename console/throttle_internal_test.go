package console

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failFrom fails one sign-in of source as the handlers do: counted only
// when the throttle let it try. It reports whether it was let.
func failFrom(l *loginThrottle, source string, now time.Time) bool {
	if l.wait(source, now) != "" {
		return false
	}
	l.failed(source, now)
	return true
}

// TestLoginThrottle_AddressFloodDoesNotReset fails sign-ins from more
// addresses than the throttle tracks: the address refused before the
// flood stays refused, and past the total budget every address waits
// until the window ends.
func TestLoginThrottle_AddressFloodDoesNotReset(t *testing.T) {
	var l loginThrottle
	now := time.Unix(1_000_000, 0)
	for range maxLoginFailures {
		require.True(t, failFrom(&l, "192.0.2.1", now))
	}
	require.Equal(t, sourceWaits, l.wait("192.0.2.1", now), "the guesser is refused")
	tried := 0
	for i := range 2 * maxTrackedAddrs {
		if failFrom(&l, fmt.Sprintf("10.%d.%d.%d", i>>16&0xff, i>>8&0xff, i&0xff), now) {
			tried++
		}
	}
	assert.NotEmpty(t, l.wait("192.0.2.1", now), "a flood of other addresses did not reset its count")
	assert.Equal(t, maxTotalFailures-maxLoginFailures, tried, "the flood got the total budget's guesses, no more")
	assert.Equal(t, allWait, l.wait("198.51.100.1", now), "past the budget, a new address waits too")
	assert.LessOrEqual(t, len(l.fails), maxTrackedAddrs)

	later := now.Add(loginWindow)
	assert.Empty(t, l.wait("198.51.100.1", later), "the next window lets sign-ins try again")
	assert.Empty(t, l.wait("192.0.2.1", later))
}

// TestLoginThrottle_TrackedSourcesStayBounded fails sign-ins from new
// addresses, half a window apart, many times over the table's size: every
// source let try is tracked while its window is open (none is dropped for
// want of room), and the table stays bounded.
func TestLoginThrottle_TrackedSourcesStayBounded(t *testing.T) {
	var l loginThrottle
	start := time.Unix(1_000_000, 0)
	n, prev := 0, 0
	for b := range 12 {
		at := start.Add(time.Duration(b) * loginWindow / 2)
		tried := 0
		for range maxTotalFailures {
			n++
			if failFrom(&l, fmt.Sprintf("10.%d.%d.%d", n>>16&0xff, n>>8&0xff, n&0xff), at) {
				tried++
			}
		}
		open := 0
		for _, f := range l.fails {
			if f.open(at) {
				open++
			}
		}
		require.Equal(t, tried+prev, open, "batch %d: this batch's and the last one's sources are tracked", b)
		require.LessOrEqual(t, len(l.fails), maxTrackedAddrs, "batch %d", b)
		prev = tried
	}
	assert.Greater(t, n, 2*maxTrackedAddrs)
}
