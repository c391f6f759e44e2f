package equeue_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestRetention_AFailingQueueHoldsBackNoOther makes the store refuse every
// delete of one queue (queue 0 of topic "bad"): a retention pass reports
// that queue's error, and still retains the other queue of that topic and
// every other topic, pass after pass. The passes used to stop at the first
// failing queue, so whatever came after it (topics are taken in no fixed
// order) kept its old messages for good.
func TestRetention_AFailingQueueHoldsBackNoOther(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	topics := []string{"bad"}
	for i := range 12 {
		topics = append(topics, fmt.Sprintf("good-%02d", i))
	}
	for _, name := range topics {
		require.NoError(t, e.CreateTopic(ctx, name, 2))
		for q := range 2 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: name, Queue: q, Messages: []*equeue.Message{{Body: []byte("a")}, {Body: []byte("b")}}})
			require.NoError(t, err)
		}
	}
	v, err := fs.GetMeta([]byte("topic/bad"))
	require.NoError(t, err)
	var meta struct {
		ID uint32 `json:"id"`
	}
	require.NoError(t, json.Unmarshal(v, &meta))
	bad := store.QueueID{Topic: meta.ID, Queue: 0}
	fs.OnDeleteRange(func(q store.QueueID, from, to uint64) error {
		if q == bad {
			return faultstore.ErrInjected
		}
		return nil
	})

	later := time.Now().Add(2 * time.Hour)
	for pass := range 3 {
		_, err := equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Hour}, later)
		require.ErrorIs(t, err, faultstore.ErrInjected, "pass %d reports the failing queue", pass)
		for _, name := range topics {
			info, err := e.Topic(ctx, name)
			require.NoError(t, err)
			for q, qi := range info.Queues {
				// The failing queue's watermark moves too (it is stored
				// before the delete); only its records stay for a later pass.
				assert.Equal(t, int64(2), qi.MinOffset, "pass %d: %s/%d retained", pass, name, q)
			}
		}
	}
	fs.OnDeleteRange(nil)
	_, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Hour}, later)
	require.NoError(t, err, "the queue's deletes pass again: its leftovers are swept")
	first, _, ok, err := fs.Bounds(bad)
	require.NoError(t, err)
	assert.True(t, !ok || first >= 2, "the failing queue's records below its watermark are deleted once the store lets them be (first stored %d)", first)
}
