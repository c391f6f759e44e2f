package equeue_test

import (
	"bytes"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A DeleteGroup that fails halfway, its keys (the index keys of its
// delayed retries among them) deleted but not its retry topic, leaves
// nothing of the group parked: Stats().ParkedDelayedMessages says what is
// really parked (here one message of another topic), and a DeleteGroup
// tried again finishes and leaves that count as it is. The failed delete
// used to leave the group's parked retries counted until it was tried
// again, though their index keys were gone.
func TestDeleteGroup_FailedHalfwayUncountsItsParkedRetries(t *testing.T) {
	mem := store.NewMemory()
	e, err := equeue.Open("", &equeue.Options{Store: faultstore.New(keepOpen{mem})})
	require.NoError(t, err)
	big := bytes.Repeat([]byte("b"), 4096)
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: big, Delay: 200 * time.Millisecond}}})
	require.NoError(t, err)
	_, err = equeue.AppendInternal(ctxBG, e, &equeue.AppendRequest{Topic: equeue.RetryTopic("g"),
		Messages: []*equeue.Message{{Body: big, Delay: 200 * time.Millisecond}}})
	require.NoError(t, err)
	require.NoError(t, e.Close())

	var logs syncBuffer
	fs := faultstore.New(huntLimited{keepOpen{mem}, store.Limits{MaxBytes: 2048}})
	e, err = equeue.Open("", &equeue.Options{Store: fs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	eventually(t, waitLong, func() bool { return e.Stats().ParkedDelayedMessages == 2 }, "both parked")
	require.Equal(t, 2, strings.Count(logs.String(), "too large to move"))

	// The write that deletes the group's keys (its delayed retry's index
	// key) is stored; every write after it is refused.
	var keysGone atomic.Bool
	fs.OnWrite(func(b *store.Batch) error {
		if keysGone.Load() {
			return faultstore.ErrInjected
		}
		if slices.ContainsFunc(b.Meta, func(op store.MetaOp) bool { return op.Delete && bytes.HasPrefix(op.Key, []byte("d/")) }) {
			keysGone.Store(true)
		}
		return nil
	})
	require.Error(t, e.DeleteGroup(ctxBG, "g", equeue.DeleteGroupOptions{}))
	require.True(t, keysGone.Load(), "the group's keys were deleted before the failure")
	fs.OnWrite(nil)
	assert.Equal(t, int64(1), e.Stats().ParkedDelayedMessages, "only t's message is parked still")
	assert.Equal(t, 1, pendingDelayed(t, e), "only t's message is pending")

	require.NoError(t, e.DeleteGroup(ctxBG, "g", equeue.DeleteGroupOptions{}))
	_, err = e.Topic(ctxBG, equeue.RetryTopic("g"))
	require.ErrorIs(t, err, equeue.ErrTopicNotFound, "the retried delete finished")
	assert.Equal(t, int64(1), e.Stats().ParkedDelayedMessages, "t's message is parked still")
	assert.Equal(t, 1, pendingDelayed(t, e))
}
