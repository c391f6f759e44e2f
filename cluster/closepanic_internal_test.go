package cluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestNode_CloseThatPanicsIsNotReportedDone: the node's OnEngine, the
// program's own, panics when Close stops the node serving. The panic
// reaches Close's caller, and every later Close or CloseContext, whatever
// its context, returns an error matching equeue.ErrCloseUnfinished: Raft
// and the stores were left as they were. Before, that error matched no
// exported sentinel, so a caller could not tell it with errors.Is.
func TestNode_CloseThatPanicsIsNotReportedDone(t *testing.T) {
	var engine atomic.Pointer[equeue.Engine]
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true, OnEngine: func(e *equeue.Engine) {
		if e == nil {
			panic("OnEngine panicked")
		}
		engine.Store(e)
	}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return engine.Load() != nil }, 20*time.Second, 10*time.Millisecond)

	require.PanicsWithValue(t, "OnEngine panicked", func() { _ = n.Close() })
	t.Cleanup(func() { // what the close left undone: the test leaves nothing running
		assert.NoError(t, engine.Load().Close())
		assert.NoError(t, n.release(false))
	})
	err = n.Close()
	require.ErrorIs(t, err, equeue.ErrCloseUnfinished, "Raft and the stores were never released: no clean close to report")
	assert.Contains(t, err.Error(), "stopped before it finished")
	assert.Equal(t, err, n.CloseContext(context.Background()), "CloseContext returns the same result")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	assert.Equal(t, err, n.CloseContext(ended), "a stopped close is returned, whatever the context")
}
