package equeue_test

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A move refused because its topic was deleted while it was under way is
// no failure of the scheduler: the message goes with its topic, dropped
// by the pass the refusal brings at once, and nothing is logged at error
// level. It used to be logged as a failure to move delayed messages
// ("moving delayed messages", with ErrTopicNotFound), and the drop waited
// for the pass tried again after a failure.
func TestDelayed_MoveRefusedForItsDeletedTopicIsNoError(t *testing.T) {
	var logs syncBuffer
	r := newFaultRig(t, "memory", &equeue.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	e := r.E
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	held, release := holdDelayMove(t, e)
	_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("d"), Delay: 50 * time.Millisecond}}})
	require.NoError(t, err)
	waitClosed(t, held, "the move is in flight")

	require.NoError(t, e.DeleteTopic(ctxBG, "t"))
	release()
	eventually(t, waitLong, func() bool {
		return strings.Contains(logs.String(), "delayed message dropped") && pendingDelayed(t, e) == 0
	}, "the scheduler dropped it with its topic")
	for _, line := range strings.Split(logs.String(), "\n") {
		assert.NotContains(t, line, "level=ERROR", "a move refused for its deleted topic is no error")
	}
}
