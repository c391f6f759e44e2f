package cluster

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oneHeldReadLog is a Raft log store whose next FirstIndex, once armed,
// holds until release is closed, then reports first.
type oneHeldReadLog struct {
	raft.LogStore
	armed   chan struct{} // receives the read to hold
	release chan struct{}
	first   uint64
}

func (l *oneHeldReadLog) FirstIndex() (uint64, error) {
	select {
	case <-l.armed:
		<-l.release
		return l.first, nil
	default:
		return l.LogStore.FirstIndex()
	}
}

// TestFirstIndexReader_ConcurrentCallWaitsForTheReadUnderWay: a Status
// arriving while another's read of the first index is on its way, within
// that read's bound, waits for that read (its bound at most) and answers
// with what it found, as the caller that started it does; only once the
// read is held past its bound do later calls answer at once with the
// index last read. Before, the second call answered at once with the
// index read before, though the read under way was not held.
func TestFirstIndexReader_ConcurrentCallWaitsForTheReadUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := raft.NewInmemStore()
		require.NoError(t, store.StoreLog(&raft.Log{Index: 5, Term: 1}))
		logs := &oneHeldReadLog{LogStore: store, armed: make(chan struct{}, 1), release: make(chan struct{}), first: 9}
		r := &firstIndexReader{read: logs.FirstIndex}
		require.Equal(t, uint64(5), r.get(), "the first read")

		logs.armed <- struct{}{}
		first := make(chan uint64, 1)
		go func() { first <- r.get() }()
		synctest.Wait() // the first call's read is held in the store
		second := make(chan uint64, 1)
		go func() { second <- r.get() }()
		synctest.Wait()
		answered := len(second) > 0
		close(logs.release)
		assert.False(t, answered, "a call during a read under way, within its bound, answered at once")
		assert.Equal(t, uint64(9), <-first, "the caller that started the read")
		assert.Equal(t, uint64(9), <-second, "the caller that came during the read")

		// A read held past its bound: the caller that started it answers
		// with the index last read, and so does a later one, at once.
		logs.release = make(chan struct{})
		logs.first = 12
		logs.armed <- struct{}{}
		start := time.Now()
		assert.Equal(t, uint64(9), r.get(), "the index last read, after the bound")
		assert.Equal(t, firstIndexReadBound, time.Since(start), "it waited its bound")
		start = time.Now()
		assert.Equal(t, uint64(9), r.get(), "a call while the read is held")
		assert.Zero(t, time.Since(start), "it did not wait")
		close(logs.release)
		synctest.Wait()
		assert.Equal(t, uint64(5), r.get(), "a new read once the held one ended")
	})
}
