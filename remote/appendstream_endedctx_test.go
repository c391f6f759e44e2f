package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestAppend_ContextEndedBeforeTheCallIsNeverSent: an append whose context
// ended before Append (or AppendAsync) was called never leaves the client,
// as the engine in-process takes none: it gets the context's error alone,
// not equeue.ErrIndeterminate, and nothing is stored.
func TestAppend_ContextEndedBeforeTheCallIsNeverSent(t *testing.T) {
	e, c := setup(t, nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	// The stream is open: later appends go on it at once.
	_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("first")}}})
	require.NoError(t, err)

	const n = 64
	for i := range n {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := c.Append(cctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.ErrorIs(t, err, context.Canceled, "append %d", i)
		require.NotErrorIs(t, err, equeue.ErrIndeterminate, "append %d left the client", i)
	}
	// One append more, answered after every earlier one on the stream.
	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("last")}}})
	require.NoError(t, err)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), info.Messages, "no append with an ended context was stored")
}
