package store

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/stretchr/testify/require"
)

// endlessGC makes s's value-log GC rounds always rewrite something, as on a
// large store with much to give back, until give is closed; hold, when not
// nil, is waited for by the first round once it started. It returns the
// count of rounds started.
func endlessGC(s *Badger, started chan<- struct{}, hold, give <-chan struct{}) *atomic.Int64 {
	var rounds atomic.Int64
	s.gcStarted = func() {
		if rounds.Add(1) == 1 {
			close(started)
			if hold != nil {
				<-hold
			}
		}
	}
	s.runGC = func(float64) error {
		select {
		case <-give:
			return badger.ErrNoRewrite
		default:
			return nil
		}
	}
	return &rounds
}

// Close stops a running Reclaim after the GC round in progress (whose
// safety sync it waits for) instead of waiting for every round left: on a
// large store those take minutes, longer than a stop is given.
func TestBadgerReclaim_CloseStopsAfterTheRoundInProgress(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	started, hold, give := make(chan struct{}), make(chan struct{}), make(chan struct{})
	// Without the stop, Reclaim would never return: the rounds end after a
	// few more once Close waits, so the test fails instead of hanging.
	var afterClose atomic.Int64
	var closeWaits atomic.Bool
	rounds := endlessGC(s, started, hold, give)
	inner := s.gcStarted
	s.gcStarted = func() {
		after := closeWaits.Load() // read before the first round holds
		inner()
		if after && afterClose.Add(1) == 5 {
			close(give)
		}
	}
	reclaimed := make(chan error, 1)
	go func() { reclaimed <- s.Reclaim() }()
	<-started
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Close waits for the Reclaim (a writer waits for mu): a new reader
	// cannot have it.
	require.Eventually(t, func() bool {
		if s.mu.TryRLock() {
			s.mu.RUnlock()
			return false
		}
		return true
	}, 10*time.Second, time.Millisecond)
	closeWaits.Store(true)
	close(hold)
	require.NoError(t, <-reclaimed, "a Reclaim cut short by Close is not a failure")
	require.NoError(t, <-closed)
	require.Zero(t, afterClose.Load(), "GC rounds started after Close began (of %d in all)", rounds.Load())
}

// ReclaimContext stops as Close stops a Reclaim once its context is done,
// and says so with the context's error.
func TestBadgerReclaim_ContextStopsAfterTheRoundInProgress(t *testing.T) {
	s, err := OpenBadger(t.TempDir(), nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	started, hold, give := make(chan struct{}), make(chan struct{}), make(chan struct{})
	rounds := endlessGC(s, started, hold, give)
	ctx, cancel := context.WithCancel(context.Background())
	reclaimed := make(chan error, 1)
	go func() { reclaimed <- s.ReclaimContext(ctx) }()
	<-started
	cancel()
	close(hold)
	err = <-reclaimed
	close(give)
	require.ErrorIs(t, err, context.Canceled)
	require.EqualValues(t, 1, rounds.Load(), "GC rounds started after the context was done")
}
