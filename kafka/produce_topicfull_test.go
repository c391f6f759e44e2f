package kafka_test

import (
	"testing"

	"github.com/equeue-go/equeue"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProduce_TopicFullSaysSo: a topic at its MaxMessages under
// OverflowReject refuses a batch with the retriable KAFKA_STORAGE_ERROR (a
// consumer or retention may make room), and the answer's error message
// names the cause, so a producer's log tells a full topic from a failing
// disk.
func TestProduce_TopicFullSaysSo(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	require.NoError(t, e.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: 1, Overflow: equeue.OverflowReject}))
	cl := kclient(t, addr)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(-1, -1, -1, "a")).ErrorCode)
	p := produceRaw(ctx, t, cl, "t", 0, rawBatch(-1, -1, -1, "b"))
	assert.Equal(t, int16(56), p.ErrorCode, "KAFKA_STORAGE_ERROR")
	assert.Equal(t, int64(-1), p.BaseOffset)
	require.NotNil(t, p.ErrorMessage, "the refusal names its cause")
	assert.Contains(t, *p.ErrorMessage, "topic full")
}
