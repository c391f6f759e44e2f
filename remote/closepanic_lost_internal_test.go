package remote

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/goid"
)

// loggedPanic reports whether a record of rec has a "panic" attribute
// that names err.
func loggedPanic(rec *records, err error) bool {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.all {
		if v, ok := attr(r, "panic"); ok && strings.Contains(v.String(), err.Error()) {
			return true
		}
	}
	return false
}

// When several callbacks a Close runs panicked, only one panic reached
// the Close's caller: the others were dropped without a word (a panic in
// a deferred step replaces the one unwinding). The first now reaches the
// caller, and each later one is logged with its value and stack.
func TestClose_CallbacksThatPanicAfterTheFirstAreLogged(t *testing.T) {
	first, second := errors.New("the first callback's panic"), errors.New("the second callback's panic")
	clients := map[string]func(t *testing.T, addr string, log *slog.Logger) reentryClient{
		"Client": func(t *testing.T, addr string, log *slog.Logger) reentryClient {
			c, err := Dial(addr, &ClientOptions{Logger: log})
			require.NoError(t, err)
			return c
		},
		"ClusterClient": func(t *testing.T, addr string, log *slog.Logger) reentryClient {
			cc, err := DialCluster([]string{addr}, &ClientOptions{Logger: log})
			require.NoError(t, err)
			cc.redirect(addr, addr)
			return cc
		},
	}
	for name, dial := range clients {
		t.Run(name, func(t *testing.T) {
			addr, _ := serveBusyStream(t)
			bothPaused := make(chan struct{})
			var paused atomic.Int32
			hook := func(wait time.Duration) {
				if wait >= 100*busyBackoffMin && paused.Add(1) == 2 {
					close(bothPaused)
				}
			}
			testHookBusyBackoff.Store(&hook) // serveBusyStream's cleanup unsets it
			rec := &records{}
			c := dial(t, addr, slog.New(rec))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var closer atomic.Uint64 // the goroutine that calls Close
			var ran atomic.Int32
			reports := make(chan error, 2)
			cb := func(_ equeue.AppendResult, err error) {
				reports <- err
				if goid.ID() != closer.Load() {
					return // nothing would recover it
				}
				if ran.Add(1) == 1 {
					panic(first)
				}
				panic(second)
			}
			c.AppendAsync(ctx, reentryReq, cb)
			c.AppendAsync(ctx, reentryReq, cb)
			within(t, bothPaused, "the appends' long busy pauses")
			recovered := make(chan any, 1)
			go func() {
				defer func() { recovered <- recover() }()
				closer.Store(goid.ID())
				_ = c.Close()
			}()
			got := within(t, recovered, "the Close whose callbacks panic")
			require.EqualValues(t, 2, ran.Load(), "both callbacks ran on the Close")
			assert.Equal(t, first, got, "the first panic reaches the caller")
			assert.True(t, loggedPanic(rec, second), "the second panic was dropped without a word")
			for range 2 {
				assert.ErrorIs(t, <-reports, equeue.ErrClosed)
			}
			require.NoError(t, within(t, closeAsync(c), "a Close after the panic"))
		})
	}
}
