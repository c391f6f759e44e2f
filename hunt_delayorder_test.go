package equeue_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A delayed batch is delivered in its order (README, Delayed messages),
// also when the store refuses the write of its first message's move while
// the move of the next one waits behind it: the second must not land in
// the queue ahead of the first.
func TestHunt_DelayedBatchKeepsItsOrderPastAFailedMoveWrite(t *testing.T) {
	// Batches of at most 8 operations: the scheduler takes at most a
	// quarter of a batch, one move.
	fs := faultstore.New(huntLimited{keepOpen{store.NewMemory()}, store.Limits{MaxEntries: 8}})
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	var failed atomic.Bool
	fs.OnWrite(func(b *store.Batch) error {
		if !isDelayMove(b) || len(b.Entries) != 1 || failed.Load() {
			return nil
		}
		// The first move is written alone: refuse it.
		failed.Store(true)
		return faultstore.ErrInjected
	})
	at := time.Now().Add(50 * time.Millisecond)
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Topic: "t", Body: []byte("first"), DeliverAt: at},
		{Topic: "t", Body: []byte("second"), DeliverAt: at},
	}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == 2 }, "both moved")
	require.True(t, failed.Load(), "the first move's write was refused alone")
	assert.Equal(t, []string{"first", "second"}, queueBodies(t, e, "t", 0), "delivered in the batch's order")
}

// huntLimited is a store whose batches hold at most what lim allows.
type huntLimited struct {
	faultstore.Store
	lim store.Limits
}

func (s huntLimited) Limits() store.Limits { return s.lim }
