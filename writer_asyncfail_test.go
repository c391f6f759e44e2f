package equeue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// gatedAsyncStore is a memory store with the AsyncWriter capability whose
// write outcomes wait at a gate; once failing is set, every write reported
// after it fails (a replicated store fails a prefix of its writes).
type gatedAsyncStore struct {
	*store.Memory
	mu      sync.Mutex
	gate    chan struct{} // nil: outcomes are reported at once
	failing error
	started chan struct{} // told of each write while gated
	waiting chan struct{} // told when the engine waits for a gated write's outcome
}

func (s *gatedAsyncStore) WriteAsync(b *store.Batch) func() error {
	s.mu.Lock()
	gate, started, waiting := s.gate, s.started, s.waiting
	s.mu.Unlock()
	select {
	case started <- struct{}{}:
	default:
	}
	return func() error {
		if gate != nil {
			select {
			case waiting <- struct{}{}:
			default:
			}
			<-gate
		}
		s.mu.Lock()
		err := s.failing
		s.mu.Unlock()
		if err != nil {
			return err
		}
		return s.Memory.Write(b)
	}
}

// On a store whose writes complete asynchronously (a replicated store), a
// send answered as a duplicate of a message whose write then fails must
// not be answered as stored: the original was never stored, so its
// outcome is unknown too.
func TestWriter_DuplicateOfAFailedAsyncWriteIsUnknown(t *testing.T) {
	st := &gatedAsyncStore{Memory: store.NewMemory()}
	var _ equeue.AsyncWriter = st
	e, err := equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	defer func() { _ = e.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))

	started := make(chan struct{}, 1)
	st.mu.Lock()
	st.gate, st.started = make(chan struct{}), started
	st.mu.Unlock()
	send := func() (equeue.AppendResult, error) {
		return e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "a", Body: []byte("a")}}})
	}
	type outcome struct {
		res equeue.AppendResult
		err error
	}
	first := make(chan outcome, 1)
	go func() { r, err := send(); first <- outcome{r, err} }()
	<-started // the original's write is on its way
	second := make(chan outcome, 1)
	go func() { r, err := send(); second <- outcome{r, err} }()
	time.Sleep(50 * time.Millisecond) // let the duplicate reach the writer (not an assertion)

	st.mu.Lock()
	st.failing = errors.New("injected replication failure")
	close(st.gate)
	st.gate = nil
	st.mu.Unlock()

	o1 := <-first
	require.Error(t, o1.err, "the failed write is not answered stored")
	o2 := <-second
	require.ErrorIs(t, o2.err, equeue.ErrIndeterminate, "the duplicate of a failed write: %+v", o2.res)
}
