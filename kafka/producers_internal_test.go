package kafka

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProducers_ExpiryDuringLookup: a producer's state that the expiry
// forgets between a batch's lookup of it and its locking must not be used
// by that batch, or the batch is recorded in a state nobody finds again,
// and its retry is stored twice.
func TestProducers_ExpiryDuringLookup(t *testing.T) {
	p := newProducers()
	batch := func(seq int32) *producedBatch {
		return &producedBatch{producerID: 7, firstSeq: seq, msgs: []*equeue.Message{{}}}
	}
	st := p.lock(1, 7, "t", 0)
	st.stored(batch(0), storedAt{base: 0})
	st.mu.Unlock()

	// The expiry runs (a day later) just after the next batch looked the
	// state up, before it locked it.
	p.lookedUp = func() {
		p.lookedUp = nil
		p.expire(time.Now().Add(2*producerIdle), producerIdle)
	}
	st = p.lock(1, 7, "t", 0)
	_, dup, code := st.check(batch(1))
	require.Equal(t, errNone, code)
	require.False(t, dup)
	st.stored(batch(1), storedAt{base: 1})
	st.mu.Unlock()

	// The producer retries that batch (its answer was lost).
	st = p.lock(1, 7, "t", 0)
	first, dup, code := st.check(batch(1))
	st.mu.Unlock()
	assert.Equal(t, errNone, code)
	assert.True(t, dup, "the retry is recognized, not stored again")
	assert.Equal(t, int64(1), first.base)
}
