package equeue_test

import (
	"fmt"
	"log/slog"
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

// When the store refuses the write of one move, the moves held back
// behind it (queued after it to the same queue) are not errors of their
// own: the failure is logged at error level once, and the held-back moves
// in one line at debug level. Each used to add a line to the error the
// scheduler logged, as did each move of the refused write.
func TestHunt_DelayedMovesHeldBackBehindAFailedWriteLogOnce(t *testing.T) {
	// Batches of at most 20 operations, the send's: the scheduler takes
	// at most a quarter of a batch, two moves; the first write of moves
	// is refused.
	fs := faultstore.New(huntLimited{keepOpen{store.NewMemory()}, store.Limits{MaxEntries: 20}})
	var logs syncBuffer
	e, err := equeue.Open("", &equeue.Options{Store: fs,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	var failed atomic.Bool
	var refused atomic.Int32 // the moves of the refused write
	fs.OnWrite(func(b *store.Batch) error {
		if isDelayMove(b) && failed.CompareAndSwap(false, true) {
			refused.Store(int32(len(b.Entries)))
			return faultstore.ErrInjected // the write of the first one or two moves
		}
		return nil
	})
	const n = 10
	at := time.Now().Add(50 * time.Millisecond)
	var msgs []*equeue.Message
	for i := range n {
		msgs = append(msgs, &equeue.Message{Topic: "t", Body: []byte{byte('a' + i)}, DeliverAt: at})
	}
	_, err = e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, e, "t", 0)) == n }, "all moved")
	require.True(t, failed.Load())

	var errorLines, heldBack []string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=ERROR") {
			errorLines = append(errorLines, l)
		}
		if strings.Contains(l, "held back") || strings.Contains(l, "held_back") {
			heldBack = append(heldBack, l)
		}
	}
	for _, l := range errorLines {
		assert.NotContains(t, l, "held back", "a held-back move is no error of its own")
		assert.Equal(t, 1, strings.Count(l, faultstore.ErrInjected.Error()), "the failure is told once: %s", l)
	}
	assert.NotEmpty(t, errorLines, "the failed write is logged")
	if assert.Len(t, heldBack, 1, "the held-back moves are told in one line") {
		assert.Contains(t, heldBack[0], "level=DEBUG")
		assert.Contains(t, heldBack[0], fmt.Sprintf("held_back=%d", n-int(refused.Load())))
	}
}
