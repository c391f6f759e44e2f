package equeue_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// noSpaceStore refuses writes of records with ErrNoSpace while full is set,
// as a Badger store on a nearly full disk does, and lets metadata in.
type noSpaceStore struct {
	equeue.Store
	full atomic.Bool
}

func (s *noSpaceStore) Write(b *store.Batch) error {
	if s.full.Load() && len(b.Entries) > 0 {
		return fmt.Errorf("%w: injected", store.ErrNoSpace)
	}
	return s.Store.Write(b)
}

func TestDiskFull_SendsFailWithErrNoSpaceAndTheLogIsPaced(t *testing.T) {
	ctx := ctxT(t)
	st := &noSpaceStore{Store: store.NewMemory()}
	var logs syncBuffer
	e, err := equeue.Open("", &equeue.Options{Store: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, e, nil)
	r0, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"k"}, Body: []byte("before")})
	require.NoError(t, err)

	st.full.Store(true)
	for i := range 50 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"k"}, Body: []byte(fmt.Sprint(i))})
		require.ErrorIs(t, err, equeue.ErrNoSpace)
		require.NotErrorIs(t, err, equeue.ErrIndeterminate, "refused whole: not stored")
	}
	// Offset commits still go in.
	require.NoError(t, e.CreateTopic(ctx, "meta", 1))
	assert.Equal(t, 1, strings.Count(logs.String(), "write refused"), "one log line for 50 refused writes:\n%s", logs.String())
	assert.Equal(t, uint64(50), e.Stats().NoSpaceRefusals)

	st.full.Store(false)
	r1, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"k"}, Body: []byte("after")})
	require.NoError(t, err)
	assert.Equal(t, r0.Offset+1, r1.Offset, "the refused sends took no offset")
}

// syncBuffer is a bytes.Buffer safe for the engine's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
