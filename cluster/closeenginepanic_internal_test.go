package cluster

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// panicsOnClosed is a log handler, the program's own, that panics when the
// engine logs that it closed: the last thing the engine's close does.
type panicsOnClosed struct{ slog.Handler }

func (h panicsOnClosed) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "engine closed" {
		panic("the engine's logger panicked")
	}
	return h.Handler.Handle(ctx, r)
}

func (panicsOnClosed) Enabled(context.Context, slog.Level) bool { return true }

func (h panicsOnClosed) WithAttrs(as []slog.Attr) slog.Handler {
	return panicsOnClosed{h.Handler.WithAttrs(as)}
}

func (h panicsOnClosed) WithGroup(name string) slog.Handler {
	return panicsOnClosed{h.Handler.WithGroup(name)}
}

// TestNode_EnginesCloseThatPanicsReachesTheNodesClose: the leader engine's
// close panics (its logger, the program's own, does) during Node.Close. As
// for a panic anywhere else in the node's close, it reaches Close's caller,
// and every later call returns an error matching
// equeue.ErrCloseUnfinished. Before, the node closed its engine with the
// engine's CloseContext, which ran the engine's close on a goroutine of
// its own, where the panic ended the program.
func TestNode_EnginesCloseThatPanicsReachesTheNodesClose(t *testing.T) {
	var engine atomic.Pointer[equeue.Engine]
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		Engine: &equeue.Options{Logger: slog.New(panicsOnClosed{slog.DiscardHandler})},
		OnEngine: func(e *equeue.Engine) {
			if e != nil {
				engine.Store(e)
			}
		}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return engine.Load() != nil }, 20*time.Second, 10*time.Millisecond)

	require.PanicsWithValue(t, "the engine's logger panicked", func() { _ = n.Close() })
	t.Cleanup(func() { // what the close left undone: the test leaves nothing running
		assert.NoError(t, n.release())
	})
	err = n.Close()
	require.ErrorIs(t, err, equeue.ErrCloseUnfinished)
	assert.Equal(t, err, n.CloseContext(context.Background()), "CloseContext returns the same result")
	require.ErrorIs(t, engine.Load().Close(), equeue.ErrCloseUnfinished, "the engine's close did not finish either")
}
