package equeue_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// gcHeldStore is a Badger store whose Reclaim, once hold was called, waits
// in its value-log GC round until release, as a round on a large store
// does: the round is not stopped by its context (the store stops a Reclaim
// only between rounds), and, as the round holds the store's write lock,
// every Write started meanwhile waits for it too.
type gcHeldStore struct {
	*store.Badger

	mu      sync.Mutex
	held    chan struct{} // closed by release; nil while nothing is held
	inRound chan struct{} // closed once a Reclaim waits in its round
	inWrite chan struct{} // closed once a Write waits behind the round
}

func (s *gcHeldStore) hold() (inRound, inWrite <-chan struct{}, release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held, s.inRound, s.inWrite = make(chan struct{}), make(chan struct{}), make(chan struct{})
	held := s.held
	return s.inRound, s.inWrite, sync.OnceFunc(func() { close(held) })
}

// lock returns the channel a call waits on, or nil, and says the call
// waits (in the round, or behind it) by closing *waits once.
func (s *gcHeldStore) lock(waits *chan struct{}) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if *waits != nil {
		close(*waits)
		*waits = nil
	}
	return s.held
}

func (s *gcHeldStore) ReclaimContext(ctx context.Context) error {
	if held := s.lock(&s.inRound); held != nil {
		<-held
	}
	return s.Badger.ReclaimContext(ctx)
}

func (s *gcHeldStore) Reclaim() error { return s.ReclaimContext(context.Background()) }

func (s *gcHeldStore) Write(b *store.Batch) error {
	if held := s.lock(&s.inWrite); held != nil {
		<-held
	}
	return s.Badger.Write(b)
}

// TestEngine_CloseContextReturnsWhileAGCRoundHoldsTheStore: a retention
// pass's Reclaim waits in a value-log GC round that does not end, a Send's
// write waits behind it, and the engine is closed with CloseContext. When
// the close's context ends, CloseContext returns at once with
// ErrCloseAbandoned and the context's error; once the round ends, the pass,
// the write and the close finish (the Reclaim stopped by the close after
// that round): Close returns nil, the write is stored, and no goroutine is
// left.
func TestEngine_CloseContextReturnsWhileAGCRoundHoldsTheStore(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) })
	ctx := ctxT(t)
	dir := t.TempDir()
	b, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	st := &gcHeldStore{Badger: b}
	e, err := equeue.Open("", &equeue.Options{Store: st, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	closedOnce := sync.OnceValue(e.Close)
	t.Cleanup(func() { _ = closedOnce() })
	require.NoError(t, e.CreateTopic(ctx, "gone", 1))
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	_, err = p.Send(ctx, &equeue.Message{Topic: "gone", Queue: 0, Body: []byte("x")})
	require.NoError(t, err)
	require.NoError(t, e.DeleteTopic(ctx, "gone")) // its space is to be reclaimed

	inRound, inWrite, release := st.hold()
	t.Cleanup(release)
	retained := make(chan error, 1)
	go func() {
		_, err := e.ApplyRetention(context.Background(), equeue.RetentionPolicy{MaxAge: -1})
		retained <- err
	}()
	select {
	case <-inRound:
	case <-ctx.Done():
		t.Fatal("the retention pass did not reclaim")
	}
	sent := make(chan error, 1)
	go func() {
		_, err := p.Send(context.Background(), &equeue.Message{Topic: "t", Queue: 0, Body: []byte("behind the round")})
		sent <- err
	}()
	select {
	case <-inWrite:
	case <-ctx.Done():
		t.Fatal("the send's write did not reach the store")
	}

	closeCtx, cancelClose := context.WithCancel(ctx)
	closed := make(chan error, 1)
	go func() { closed <- e.CloseContext(closeCtx) }()
	eventually(t, waitLong, func() bool {
		_, err := e.Route(ctx, "t")
		return err != nil
	}, "the close starts: the engine takes no more calls")
	cancelClose()
	select {
	case err := <-closed:
		require.ErrorIs(t, err, equeue.ErrCloseAbandoned)
		require.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		release()
		t.Fatalf("CloseContext waits for the GC round after its context ended (it returned %v)", <-closed)
	}
	_, err = equeue.Open(dir, nil)
	require.ErrorIs(t, err, equeue.ErrLocked, "the store is not closed while the round holds it")

	release()
	assert.ErrorIs(t, <-retained, context.Canceled, "the Reclaim, let go, is stopped by the close after its round")
	assert.NoError(t, <-sent, "the write behind the round is stored once it ends")
	require.NoError(t, closedOnce(), "the close finishes once the round ends; Close returns its result")

	e2, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e2.Close()) }()
	assert.Equal(t, []string{"behind the round"}, queueBodies(t, e2, "t", 0))
}
