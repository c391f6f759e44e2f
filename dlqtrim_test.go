package equeue_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A dead-letter topic whose oldest entries were trimmed still lists from a
// From below its first offset: the listing starts at the first one kept.
func TestDLQ_ListFromBelowTheFirstKeptOffset(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	for i := range 5 {
		msg := &equeue.Message{Body: fmt.Appendf(nil, "dl%d", i)}
		msg.SetSysProperties(map[string]string{equeue.SysOriginTopic: "t", equeue.SysOriginQueue: "0", equeue.SysOriginOffset: fmt.Sprint(i)})
		_, err := equeue.AppendInternal(ctx, e, &equeue.AppendRequest{Topic: equeue.DLQTopic("g"), Messages: []*equeue.Message{msg}})
		require.NoError(t, err)
	}
	require.NoError(t, e.SetTopicLimits(ctx, equeue.DLQTopic("g"), equeue.TopicLimits{MaxMessages: 2, Overflow: equeue.OverflowDropOldest}))

	dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: 0, Max: 10})
	require.NoError(t, err)
	require.Len(t, dls, 2, "the two kept dead letters")
	assert.Equal(t, int64(3), dls[0].Offset)
	assert.Equal(t, "dl3", string(dls[0].Message.Body))
	assert.Equal(t, int64(4), dls[1].Offset)

	dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: 4, Max: 10})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.Equal(t, int64(4), dls[0].Offset)

	dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: 5, Max: 10})
	require.NoError(t, err)
	assert.Empty(t, dls, "nothing past the last")
}
