package remote_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// tinyMessages returns n messages of one byte and no ID: the broker's
// answer (an ID of 24 characters each) is several times their request.
func tinyMessages(n int) []*equeue.Message {
	msgs := make([]*equeue.Message, n)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: []byte("x")}
	}
	return msgs
}

// An append whose answer the client could not receive (its IDs pass the
// client's MaxMessageBytes, though the request fits) is refused before it
// is sent: not stored, and reported so, on the stream and on a server
// without it. The stream goes on.
func TestAppend_AnswerOverTheClientsLimitIsRefusedNotStored(t *testing.T) {
	for _, streams := range []bool{true, false} {
		t.Run(fmt.Sprintf("streams=%v", streams), func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			addr, _ := countedServer(t, e, streams)
			c := dial(t, addr, &remote.ClientOptions{MaxMessageBytes: 64 << 10})
			// About 20 KiB of request, 100 KiB of answer.
			_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: tinyMessages(4000)})
			require.Error(t, err)
			stored := len(storedBodies(t, e, "t")) > 0
			if !errors.Is(err, equeue.ErrIndeterminate) {
				assert.False(t, stored, "reported as not stored (%v), but stored", err)
			}
			assert.ErrorIs(t, err, equeue.ErrMessageTooLarge)
			assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "the client knows its limit before it sends")
			assert.False(t, stored)
			res, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: tinyMessages(10)})
			require.NoError(t, err)
			require.Len(t, res.IDs, 10)
			assert.LessOrEqual(t, len(res.IDs[0]), remote.GeneratedIDBytes, "the bound counts engine-made IDs at their length")
		})
	}
}

// Appends whose answers each fit the client's limit, but not together, are
// all answered when the broker finishes them at once: it splits the
// answers of an AppendStream call within the client's limit instead of
// sending one message the client cannot receive (which broke the call and
// left every append on it unknown, though stored).
func TestAppendStream_AnswersAreSplitWithinTheClientsLimit(t *testing.T) {
	ctx := ctxT(t)
	gs, e := gatedEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 64 << 10})
	_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: tinyMessages(1)})
	require.NoError(t, err)

	gs.hold()
	const n = 16
	done := make(chan error, n)
	for range n {
		// About 40 KiB of answer each: two pass the limit.
		c.AppendAsync(ctx, &equeue.AppendRequest{Topic: "t", Messages: tinyMessages(1500)},
			func(res equeue.AppendResult, err error) {
				if err == nil && len(res.IDs) != 1500 {
					err = fmt.Errorf("%d IDs", len(res.IDs))
				}
				done <- err
			})
	}
	eventually(t, 10*time.Second, func() bool { return gs.waiting.Load() > 0 }, "no write reached the store")
	gs.release()
	for i := range n {
		require.NoError(t, <-done, "append %d", i)
	}
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1+n*1500), info.Queues[0].MaxOffset)
}
