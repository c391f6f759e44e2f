package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestClient_CreateTopicWithDedupWindow creates an idempotent topic through
// the client: a resent producer ID is acknowledged as a duplicate.
func TestClient_CreateTopicWithDedupWindow(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, c.CreateTopicWith(ctx, "idem", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))
	assert.ErrorIs(t, c.CreateTopicWith(ctx, "bad", equeue.TopicOptions{DedupWindow: -time.Second}), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, c.CreateTopicWith(ctx, "idem", equeue.TopicOptions{}), equeue.ErrTopicExists)
	p, err := equeue.NewProducer(c, nil)
	require.NoError(t, err)
	defer p.Close()
	first, err := p.Send(ctx, &equeue.Message{Topic: "idem", ID: "x-1", Body: []byte("a")})
	require.NoError(t, err)
	again, err := p.Send(ctx, &equeue.Message{Topic: "idem", ID: "x-1", Body: []byte("a")})
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, first.Queue, again.Queue)
	assert.Equal(t, first.Offset, again.Offset)
	info, err := e.Topic(ctx, "idem")
	require.NoError(t, err)
	var n int64
	for _, q := range info.Queues {
		n += q.MaxOffset
	}
	assert.Equal(t, int64(1), n, "stored once")
}
