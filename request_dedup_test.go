package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRequest_DuplicateIDOnADedupTopicFailsAtOnce: a request sent again
// with the ID of one the topic's dedup window holds is not stored, so no
// handler ever answers it; Request says so at once (ErrDuplicateRequest)
// rather than waiting for a reply that cannot come.
func TestRequest_DuplicateIDOnADedupTopicFailsAtOnce(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopicWith(ctx, "rpc", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	p := newProducer(t, e, nil)

	fctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := p.Request(fctx, &equeue.Message{Topic: "rpc", ID: "job-1", Body: []byte("x")})
	require.ErrorIs(t, err, equeue.ErrRequestTimeout, "nobody answers")
	info, err := e.Topic(ctx, "rpc")
	require.NoError(t, err)
	require.Equal(t, int64(1), info.Messages, "the first request was stored")

	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	_, err = p.Request(rctx, &equeue.Message{Topic: "rpc", ID: "job-1", Body: []byte("x")})
	assert.ErrorIs(t, err, equeue.ErrDuplicateRequest)
	assert.NoError(t, rctx.Err(), "answered before the request's context ended")
	n, _ := equeue.PendingRequests(p)
	assert.Zero(t, n, "no request left waiting")
}
