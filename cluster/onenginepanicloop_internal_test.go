package cluster

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestNode_OnEngineThatPanicsInTheReconcileLoopIsLogged: a tenure ends (a
// failed write fences it) and the node's own reconcile loop stops its
// engine and starts a new tenure; OnEngine, the program's own, panics
// when told the engine stopped (nil), and again when handed the new
// engine. Nobody called the loop: each panic is recovered and logged by
// the node's logger, at error level, the old engine is closed all the
// same, and the node goes on serving with the new one, and closes
// cleanly. Before, the panic was raised on the loop's goroutine, which
// ended the program (here the test binary).
func TestNode_OnEngineThatPanicsInTheReconcileLoopIsLogged(t *testing.T) {
	var armed atomic.Bool
	var mu sync.Mutex
	var engines []*equeue.Engine
	logged := newLoggedRecords()
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		Logger: slog.New(logged),
		OnEngine: func(e *equeue.Engine) {
			if e != nil {
				mu.Lock()
				engines = append(engines, e)
				mu.Unlock()
			}
			if armed.Load() {
				if e == nil {
					panic("OnEngine panicked on nil")
				}
				armed.Store(false)
				panic("OnEngine panicked on the new engine")
			}
		}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	n.mu.RLock()
	rs := n.rstore
	n.mu.RUnlock()

	armed.Store(true)
	rs.fence(errors.New("test: a write failed")) // the tenure ends: the loop stops the engine
	for _, p := range []string{"OnEngine panicked on nil", "OnEngine panicked on the new engine"} {
		require.Eventually(t, func() bool { return logged.find("ERROR", "OnEngine", p) != "" }, time.Minute, 10*time.Millisecond,
			"the panic of OnEngine (%s) is logged", p)
	}
	require.Eventually(t, func() bool {
		e, err := n.Engine()
		mu.Lock()
		defer mu.Unlock()
		return err == nil && len(engines) == 2 && e == engines[1]
	}, time.Minute, 10*time.Millisecond, "the node goes on, serving with the new engine")
	mu.Lock()
	old := engines[0]
	mu.Unlock()
	_, err = old.Route(context.Background(), "t")
	require.ErrorIs(t, err, equeue.ErrClosed, "the ended tenure's engine is closed though OnEngine panicked first")
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))
	require.NoError(t, n.Close())
}
