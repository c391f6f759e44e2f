package cluster

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
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
		assert.NoError(t, n.release(false))
	})
	err = n.Close()
	require.ErrorIs(t, err, equeue.ErrCloseUnfinished)
	assert.Equal(t, err, n.CloseContext(context.Background()), "CloseContext returns the same result")
	require.ErrorIs(t, engine.Load().Close(), equeue.ErrCloseUnfinished, "the engine's close did not finish either")
}

// loggedRecords is a log handler that keeps the messages and attributes
// of the records it is given, for a test to wait for one.
type loggedRecords struct {
	mu   *sync.Mutex
	logs *[]string
}

func newLoggedRecords() loggedRecords { return loggedRecords{mu: new(sync.Mutex), logs: new([]string)} }

func (h loggedRecords) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " " + r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	*h.logs = append(*h.logs, line)
	return nil
}

// find is the first record kept whose line holds every part, "" if none.
func (h loggedRecords) find(parts ...string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
next:
	for _, l := range *h.logs {
		for _, p := range parts {
			if !strings.Contains(l, p) {
				continue next
			}
		}
		return l
	}
	return ""
}

func (loggedRecords) Enabled(context.Context, slog.Level) bool { return true }
func (h loggedRecords) WithAttrs([]slog.Attr) slog.Handler     { return h }
func (h loggedRecords) WithGroup(string) slog.Handler          { return h }

// TestNode_GivenUpEngineCloseThatPanicsLaterIsLogged: the leader engine's
// close waits on a write held in its store's admission (a hung disk), the
// node's CloseContext gives the close up, and the node, after its grace,
// gives its engine's close up too and finishes its own. Only then does the
// store answer, and the engine's close, going on in the background,
// panics (its logger, the program's own, does). Nobody waits for that
// close any more: the panic is recovered and logged by the node's logger,
// and the program goes on. Before, it was raised again in the background
// goroutine, which ended the program (here the test binary) long after
// its Close had returned.
func TestNode_GivenUpEngineCloseThatPanicsLaterIsLogged(t *testing.T) {
	var engine atomic.Pointer[equeue.Engine]
	var held atomic.Bool
	inWrite, released := make(chan struct{}), make(chan struct{})
	enter, release := sync.OnceFunc(func() { close(inWrite) }), sync.OnceFunc(func() { close(released) })
	t.Cleanup(release)
	logged := newLoggedRecords()
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", Bootstrap: true,
		Logger: slog.New(logged),
		Engine: &equeue.Options{Logger: slog.New(panicsOnClosed{slog.DiscardHandler})},
		OnEngine: func(e *equeue.Engine) {
			engine.Store(e)
		},
		admitHook: func(b *store.Batch) error {
			if held.Load() && len(b.Entries) > 0 {
				enter()
				<-released
			}
			return nil
		}})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return engine.Load() != nil }, 20*time.Second, 10*time.Millisecond)
	ctx := context.Background()
	e := engine.Load()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	held.Store(true)
	go func() { // its outcome is the append's concern, not the close's
		_, _ = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("held")}}})
	}()
	select {
	case <-inWrite:
	case <-time.After(time.Minute):
		t.Fatal("the append did not reach the store's admission")
	}

	closeCtx, cancelClose := context.WithCancel(ctx)
	closed := make(chan error, 1)
	go func() { closed <- n.CloseContext(closeCtx) }()
	require.Eventually(t, func() bool { return engine.Load() == nil }, time.Minute, 10*time.Millisecond, "the node stops serving")
	cancelClose()
	require.ErrorIs(t, <-closed, equeue.ErrCloseAbandoned)
	require.ErrorIs(t, n.Close(), equeue.ErrCloseAbandoned, "the node finished its close, its engine's given up")

	release() // the engine's close goes on, and panics
	require.Eventually(t, func() bool {
		return logged.find("ERROR", "panicked", "the engine's logger panicked") != ""
	}, time.Minute, 10*time.Millisecond, "the panic of the given-up close is logged")
	require.ErrorIs(t, e.Close(), equeue.ErrCloseUnfinished, "the engine's close did not finish")
}
