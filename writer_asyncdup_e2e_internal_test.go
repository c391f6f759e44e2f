package equeue

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// heldAsyncStore is a memory store with the AsyncWriter capability whose
// write outcomes wait at a gate while one is set, and which refuses (as
// "not stored") a write holding a record whose body is refuseBody, and
// every write after it, as a replicated store fails a prefix of its writes.
type heldAsyncStore struct {
	*store.Memory
	mu         sync.Mutex
	gate       chan struct{}
	refuseBody []byte
	refused    error         // set once a write was refused
	failing    error         // every outcome reported after it is set
	started    chan struct{} // told of each write
	waiting    chan struct{} // told when the engine waits at the gate
}

func (s *heldAsyncStore) WriteAsync(b *store.Batch) func() error {
	s.mu.Lock()
	gate := s.gate
	if s.refused == nil && s.refuseBody != nil {
		for _, en := range b.Entries {
			if bytes.Contains(en.Value, s.refuseBody) {
				s.refused = fmt.Errorf("%w: injected: the write was not proposed", ErrNotLeader)
			}
		}
	}
	refused := s.refused
	s.mu.Unlock()
	s.started <- struct{}{}
	return func() error {
		if gate != nil {
			s.waiting <- struct{}{}
			<-gate
		}
		if refused != nil {
			return refused
		}
		s.mu.Lock()
		failing := s.failing
		s.mu.Unlock()
		if failing != nil {
			return failing
		}
		return s.Memory.Write(b)
	}
}

type asyncOutcome struct {
	res AppendResult
	err error
}

// queueBehindHeldWrites opens an engine on st, stores "a", then holds the
// outcome of the write of "x" (original, its body) and has "y" written
// behind it, so that a duplicate of "a" and a new message "z" queue for
// one batch together. It returns their outcomes and the gate that lets the
// held writes' outcomes be reported.
func queueBehindHeldWrites(ctx context.Context, t *testing.T, st *heldAsyncStore, xID string) (orig, x, y, dup, z <-chan asyncOutcome, gate chan struct{}) {
	e, err := Open("", &Options{Store: st})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	send := func(id, body string) chan asyncOutcome {
		out := make(chan asyncOutcome, 1)
		go func() {
			r, err := e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{ID: id, Body: []byte(body)}}})
			out <- asyncOutcome{r, err}
		}()
		return out
	}
	o := make(chan asyncOutcome, 1)
	if xID != "a" {
		first := <-send("a", "a")
		require.NoError(t, first.err)
		o <- first
	}
	for len(st.started) > 0 {
		<-st.started
	}
	gate = make(chan struct{})
	st.mu.Lock()
	st.gate = gate
	st.mu.Unlock()
	x = send(xID, xID)
	<-st.waiting // the completer waits for x's write
	y = send("y", "y")
	<-st.started
	<-st.started // y's write is made: the writer now waits to hand it over
	dup = send("a", "a")
	z = send("z", "refuse-me")
	require.Eventually(t, func() bool { return len(e.writeCh) == 2 }, 30*time.Second, time.Millisecond,
		"the duplicate and the new message queue behind y, for one batch")
	return o, x, y, dup, z, gate
}

func newHeldAsyncStore() *heldAsyncStore {
	return &heldAsyncStore{Memory: store.NewMemory(), started: make(chan struct{}, 16), waiting: make(chan struct{}, 16)}
}

// A send repeating a stored message, written in one batch with a new
// message whose replicated write is then refused as "not stored", is
// answered as the duplicate it is: stored, at its original's offset. The
// new message gets the refusal.
func TestWriter_DuplicateSharingARefusedAsyncWriteIsStored(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := newHeldAsyncStore()
	orig, x, y, dup, z, gate := queueBehindHeldWrites(ctx, t, st, "x")
	st.mu.Lock()
	st.gate, st.refuseBody = nil, []byte("refuse-me")
	st.mu.Unlock()
	close(gate)

	require.NoError(t, (<-x).err)
	require.NoError(t, (<-y).err)
	require.ErrorIs(t, (<-z).err, ErrNotLeader, "the new message's write was refused")
	od := <-dup
	require.NoError(t, od.err, "the duplicate names a message an earlier write stored")
	require.True(t, od.res.Duplicate)
	require.Equal(t, (<-orig).res.FirstOffset, od.res.FirstOffset)
}

// A duplicate of a message whose write was still replicating when the
// duplicate's batch was applied, sharing that batch with a new message,
// is of unknown outcome when the original's write fails: neither stored
// nor "not stored" as its own batch's refusal says.
func TestWriter_DuplicateOfAHeldWriteThatFailsIsUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := newHeldAsyncStore()
	_, x, y, dup, z, gate := queueBehindHeldWrites(ctx, t, st, "a")
	given := fmt.Errorf("%w: injected: the entry was given up", ErrIndeterminate)
	st.mu.Lock()
	st.gate, st.failing, st.refuseBody = nil, given, []byte("refuse-me")
	st.mu.Unlock()
	close(gate)

	require.ErrorIs(t, (<-x).err, ErrIndeterminate, "the original's write failed")
	require.Error(t, (<-y).err)
	require.ErrorIs(t, (<-z).err, ErrNotLeader, "the new message's write was refused")
	od := <-dup
	require.ErrorIs(t, od.err, ErrIndeterminate, "the duplicate names a message of a failed write")
}
