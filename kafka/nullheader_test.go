package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestProduce_NullHeaderValueComesBackEmpty pins what the README says of
// headers: a header's null value is stored and fetched as an empty one
// (properties are strings), and a tag header with a null value, which
// makes no tag, comes back as no header at all.
func TestProduce_NullHeaderValueComesBackEmpty(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	r := kmsg.Record{Value: []byte("v"), Headers: []kmsg.Header{{Key: "n", Value: nil}, {Key: "equeue-tag", Value: nil}}}
	r.Length = int32(len(r.AppendTo(nil)) - 1)
	recs := r.AppendTo(nil)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatchOf(batchHeader{pid: -1, count: 1}, recs)).ErrorCode)

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, map[string]string{"n": ""}, res.Messages[0].Properties)
	assert.Empty(t, res.Messages[0].Tag)

	c := kclient(t, addr, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	got := pollN(ctx, t, c, 1)
	require.Len(t, got[0].Headers, 1, "the null tag header is gone")
	assert.Equal(t, "n", got[0].Headers[0].Key)
	assert.NotNil(t, got[0].Headers[0].Value, "empty, not null")
	assert.Empty(t, got[0].Headers[0].Value)
}
