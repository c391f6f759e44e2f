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

// admittingStore is an asynchronous store (as a cluster's replicated store
// is) that refuses writes before making them while full is set
// (equeue.WriteAdmitter), and counts the writes it was asked to make.
type admittingStore struct {
	equeue.Store
	full   atomic.Bool
	writes atomic.Int64
}

func (s *admittingStore) AdmitWrite(b *store.Batch) error {
	if s.full.Load() && len(b.Entries) > 0 {
		return fmt.Errorf("%w: injected at admission", store.ErrNoSpace)
	}
	return nil
}

func (s *admittingStore) WriteAsync(b *store.Batch) func() error {
	s.writes.Add(1)
	err := s.Store.Write(b)
	if err == nil {
		err = s.Store.Sync()
	}
	return func() error { return err }
}

// TestDiskFull_AdmissionRefusesBeforeTheWrite: a store that refuses a
// write before it is made (a cluster's leader whose disk is nearly full)
// gets no write; the senders get ErrNoSpace, "not stored", the refused
// sends take no offset, and sends pipelined behind them go on as before.
func TestDiskFull_AdmissionRefusesBeforeTheWrite(t *testing.T) {
	ctx := ctxT(t)
	st := &admittingStore{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	r0, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("before")})
	require.NoError(t, err)

	st.full.Store(true)
	before := st.writes.Load()
	for i := range 20 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
		require.ErrorIs(t, err, equeue.ErrNoSpace)
		require.NotErrorIs(t, err, equeue.ErrIndeterminate)
	}
	require.NoError(t, e.CreateTopic(ctx, "meta", 1), "metadata is admitted")
	assert.Equal(t, before+1, st.writes.Load(), "only the admitted metadata write was made")
	assert.Equal(t, uint64(20), e.Stats().NoSpaceRefusals)

	st.full.Store(false)
	futs := make([]*equeue.SendFuture, 50)
	for i := range futs {
		futs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
	}
	for i, f := range futs {
		r, err := f.Result(ctx)
		require.NoError(t, err)
		assert.Equal(t, r0.Offset+1+int64(i), r.Offset, "no offset was taken by the refused sends")
	}
}

// A store short of space refuses writes of records but takes metadata
// alone. A metadata change (here a topic's creation; offset commits and
// retention's watermarks alike) that shares its batch with a refused send
// is still stored: it does not fail for another command's records.
func TestDiskFull_MetadataSharingABatchWithARefusedSendIsStored(t *testing.T) {
	r := newFaultRig(t, "memory", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	var full atomic.Bool
	inWrite, held := make(chan struct{}), make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	t.Cleanup(release)
	var once sync.Once
	r.FS.OnWrite(func(b *store.Batch) error {
		for _, e := range b.Entries {
			if bytes.Contains(e.Value, []byte("hold")) {
				once.Do(func() { close(inWrite); <-held })
				return nil
			}
		}
		if full.Load() && len(b.Entries) > 0 {
			return fmt.Errorf("%w: injected", store.ErrNoSpace)
		}
		return nil
	})
	answer := func(body string) <-chan error {
		ch := make(chan error, 1)
		r.E.AppendAsync(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs(body)},
			func(_ equeue.AppendResult, err error) { ch <- err })
		return ch
	}
	// Hold the writer in a write while the send and the metadata change
	// queue, so that they make one batch.
	heldSend := answer("hold")
	<-inWrite
	full.Store(true)
	created := make(chan error, 1)
	go func() { created <- r.E.CreateTopic(ctxBG, "meta", 1) }()
	refused := answer("refused")
	eventually(t, waitLong, func() bool { return equeue.QueuedCommands(r.E) == 2 }, "both queued")
	release()
	require.NoError(t, <-heldSend)

	require.ErrorIs(t, <-refused, equeue.ErrNoSpace)
	require.NoError(t, <-created, "metadata alone is admitted: it must not fail for the send beside it")
	_, err := r.E.Topic(ctxBG, "meta")
	require.NoError(t, err)
	assert.Equal(t, []string{"hold"}, queueBodies(t, r.E, "t", 0))
}
