package closeonce

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	errStopped   = errors.New("stopped")
	errAbandoned = errors.New("abandoned")
)

// TestWait_RunsOnceAndGivesEveryCallerItsResult: the first Wait runs the
// close; later ones return its result without running it again.
func TestWait_RunsOnceAndGivesEveryCallerItsResult(t *testing.T) {
	c := New()
	var runs atomic.Int32
	boom := errors.New("final sync failed")
	shutdown := func() error { runs.Add(1); return boom }
	assert.ErrorIs(t, c.Wait(context.Background(), shutdown, errStopped, errAbandoned), boom)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	assert.ErrorIs(t, c.Wait(ctx, shutdown, errStopped, errAbandoned), boom, "finished: the result, even for an ended context")
	assert.Equal(t, int32(1), runs.Load())
}

// TestWait_AbandonedWhenItsContextEndsFirst: a Wait whose context ends
// before the close finished returns abandoned and the context's error;
// the close goes on, and a later Wait returns its result.
func TestWait_AbandonedWhenItsContextEndsFirst(t *testing.T) {
	c := New()
	release, started := make(chan struct{}), make(chan struct{})
	shutdown := func() error { close(started); <-release; return nil }
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() { waited <- c.Wait(ctx, shutdown, errStopped, errAbandoned) }()
	<-started
	cancel()
	err := <-waited
	assert.ErrorIs(t, err, errAbandoned)
	assert.ErrorIs(t, err, context.Canceled)
	close(release)
	assert.NoError(t, c.Wait(context.Background(), shutdown, errStopped, errAbandoned))
}

// TestWait_ACloseThatPanicsIsNeverReportedClean: the panic goes on to
// the caller that ran the close; every Wait then returns stopped.
func TestWait_ACloseThatPanicsIsNeverReportedClean(t *testing.T) {
	c := New()
	shutdown := func() error { panic("store Close panicked") }
	require.Panics(t, func() { _ = c.Wait(context.Background(), shutdown, errStopped, errAbandoned) })
	assert.ErrorIs(t, c.Wait(context.Background(), shutdown, errStopped, errAbandoned), errStopped)
}
