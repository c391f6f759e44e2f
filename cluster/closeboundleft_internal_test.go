package cluster

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// closeBoundLeft counts the engine's close bound from began when set, and
// from now otherwise: what the consumers' phase spent of it is not given
// again to the rest of the engine's close.
func TestCloseBoundLeft(t *testing.T) {
	now := time.Unix(1000, 0)
	require.Equal(t, engineCloseBound, closeBoundLeft(time.Time{}, now), "unset: the whole bound from now")
	require.Equal(t, engineCloseBound, closeBoundLeft(now.Add(time.Second), now), "a later start: the whole bound")
	require.Equal(t, engineCloseBound-time.Second, closeBoundLeft(now.Add(-time.Second), now))
	require.Equal(t, time.Duration(0), closeBoundLeft(now.Add(-2*engineCloseBound), now), "spent")
}
