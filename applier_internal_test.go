package equeue

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A newer assignment posted while a failed one waits to be retried is
// applied at once, not after the failed one's backoff (an hour here).
func TestApplier_NewerAssignmentCutsTheRetryWaitShort(t *testing.T) {
	var (
		mu      sync.Mutex
		applied []int64
	)
	failed := make(chan struct{})
	p := newApplier(context.Background(), func(_ context.Context, a Assignment) error {
		mu.Lock()
		defer mu.Unlock()
		applied = append(applied, a.Version)
		if a.Version == 1 {
			close(failed)
			return errors.New("broker unavailable")
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	p.minBackoff = time.Hour
	t.Cleanup(p.stop)

	p.post(Assignment{Version: 1})
	<-failed
	// The failed one is waiting to be retried (or about to): a newer one
	// replaces it and is applied without the hour's wait.
	p.post(Assignment{Version: 2})
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(applied) == 2
	}, 10*time.Second, time.Millisecond, "the newer assignment waited for the failed one's backoff")
	mu.Lock()
	assert.Equal(t, []int64{1, 2}, applied, "the failed one is not retried once a newer one came")
	mu.Unlock()
	assert.Equal(t, int64(0), p.known(func() int64 { return 0 }), "nothing is left to apply")
}

// A wake-up left by a post whose assignment was applied does not cut the
// backoff of a later failure short: the failed one is retried after its
// wait, not at once.
func TestApplier_StaleWakeUpDoesNotSkipTheBackoff(t *testing.T) {
	var (
		mu      sync.Mutex
		calls   int
		started = make(chan struct{})
		release = make(chan struct{})
		second  = make(chan struct{})
	)
	p := newApplier(context.Background(), func(ctx context.Context, a Assignment) error {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		switch {
		case a.Version == 1:
			close(started)
			<-release // v2 is posted meanwhile: a wake-up is left behind
			return nil
		case n == 2: // v2's first apply
			close(second)
			return errors.New("broker unavailable")
		}
		return nil
	}, slog.New(slog.DiscardHandler))
	p.minBackoff = time.Hour
	t.Cleanup(p.stop)

	p.post(Assignment{Version: 1})
	<-started
	p.post(Assignment{Version: 2})
	close(release)
	<-second
	// v2 failed and waits its hour: a retry now would be a third call.
	require.Never(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return calls > 2
	}, 200*time.Millisecond, 5*time.Millisecond, "the failed apply was retried without its backoff")
	assert.Equal(t, int64(2), p.known(func() int64 { return 0 }), "v2 still waits to be retried")
}

// TestApplier_AgainAppliesTheLastAssignmentOnceMore: again while an
// assignment is applied applies it once more right after; again with
// nothing applied yet, after reset (the former membership's assignments
// are dropped) or after stop applies nothing.
func TestApplier_AgainAppliesTheLastAssignmentOnceMore(t *testing.T) {
	var (
		mu      sync.Mutex
		applied []int64
	)
	entered := make(chan struct{}, 4)
	release := make(chan struct{})
	p := newApplier(context.Background(), func(_ context.Context, a Assignment) error {
		mu.Lock()
		applied = append(applied, a.Version)
		mu.Unlock()
		entered <- struct{}{}
		<-release
		return nil
	}, slog.New(slog.DiscardHandler))
	t.Cleanup(p.stop)
	calls := func() []int64 {
		mu.Lock()
		defer mu.Unlock()
		return append([]int64(nil), applied...)
	}
	idle := func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return !p.running
	}

	p.again()
	assert.True(t, idle(), "nothing applied yet: nothing to apply again")
	p.post(Assignment{Version: 1})
	<-entered
	p.again()
	assert.Equal(t, int64(1), p.known(func() int64 { return 0 }), "the heartbeats tell the version applied again")
	release <- struct{}{}
	<-entered
	release <- struct{}{}
	require.Eventually(t, idle, 10*time.Second, time.Millisecond, "the applier goes idle")
	assert.Equal(t, []int64{1, 1}, calls(), "applied again once, after the apply under way")

	p.reset()
	p.again()
	assert.True(t, idle(), "after reset the former assignment is not applied again")
	p.stop()
	p.again()
	assert.True(t, idle(), "after stop nothing is applied")
	assert.Equal(t, []int64{1, 1}, calls())
}
