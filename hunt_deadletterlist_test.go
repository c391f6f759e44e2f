package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// ListDeadLetters documents ErrInvalidArgument for a Max outside
// 0..1024: a group that has no dead letters yet (no dead-letter topic)
// is refused as one that has some, on the engine and on a namespace, and
// the deprecated DeadLetters with it.
func TestHunt_ListDeadLettersRefusesABadMaxWithNoDeadLetters(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	for _, max := range []int{-1, equeue.MaxPullBatch + 1} {
		_, err := e.ListDeadLetters(ctxBG, "nobody", equeue.ListDeadLettersRequest{Max: max})
		assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "engine, max %d", max)
		_, err = ns.ListDeadLetters(ctxBG, "nobody", equeue.ListDeadLettersRequest{Max: max})
		assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "namespace, max %d", max)
		_, err = e.DeadLetters(ctxBG, "nobody", 0, max)
		assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "DeadLetters, max %d", max)
	}
	for _, max := range []int{0, 1, equeue.MaxPullBatch} {
		dls, err := e.ListDeadLetters(ctxBG, "nobody", equeue.ListDeadLettersRequest{Max: max})
		require.NoError(t, err, "max %d", max)
		assert.Empty(t, dls)
	}
}
