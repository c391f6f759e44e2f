package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// panicsOnceOnClosed is panicsOnClosed that panics the first time only.
type panicsOnceOnClosed struct {
	slog.Handler
	done *atomic.Bool
}

func (h panicsOnceOnClosed) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "engine closed" && h.done.CompareAndSwap(false, true) {
		panic("the engine's logger panicked")
	}
	return h.Handler.Handle(ctx, r)
}

func (panicsOnceOnClosed) Enabled(context.Context, slog.Level) bool { return true }

func (h panicsOnceOnClosed) WithAttrs(as []slog.Attr) slog.Handler {
	return panicsOnceOnClosed{h.Handler.WithAttrs(as), h.done}
}

func (h panicsOnceOnClosed) WithGroup(name string) slog.Handler {
	return panicsOnceOnClosed{h.Handler.WithGroup(name), h.done}
}

// TestNode_EngineCloseThatPanicsInTheReconcileLoopIsLogged: a tenure ends
// (a failed write fences it) and the node's own reconcile loop closes its
// engine, whose close panics (its logger, the program's own, does).
// Nobody called that close: the panic is recovered and logged by the
// node's logger, at error level, and the node goes on, leading with a
// new engine, and closes cleanly. Before, the panic was raised again on
// the loop's goroutine, which ended the program (here the test binary).
func TestNode_EngineCloseThatPanicsInTheReconcileLoopIsLogged(t *testing.T) {
	var panicked atomic.Bool
	var engines atomic.Int64
	logged := newLoggedRecords()
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		Logger: slog.New(logged),
		Engine: &equeue.Options{Logger: slog.New(panicsOnceOnClosed{slog.DiscardHandler, &panicked})},
		OnEngine: func(e *equeue.Engine) {
			if e != nil {
				engines.Add(1)
			}
		}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	n.mu.RLock()
	rs := n.rstore
	n.mu.RUnlock()

	rs.fence(errors.New("test: a write failed")) // the tenure ends: the loop closes the engine
	require.Eventually(t, func() bool {
		return logged.find("ERROR", "panicked", "the engine's logger panicked") != ""
	}, time.Minute, 10*time.Millisecond, "the panic of the loop's close of the engine is logged")
	require.True(t, panicked.Load())
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil && engines.Load() == 2 }, time.Minute, 10*time.Millisecond,
		"the node goes on, serving with a new engine")
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))
	require.NoError(t, n.Close())
}
