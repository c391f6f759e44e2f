package equeue

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Topic metadata written before limits existed reads with none; limits
// written now read back as written.
func TestTopicMeta_LimitsAppendOnly(t *testing.T) {
	var old topicMeta
	require.NoError(t, json.Unmarshal([]byte(`{"name":"a","id":1,"queues":2,"created_at":"2026-01-02T03:04:05Z"}`), &old))
	assert.Nil(t, old.Limits)
	assert.Equal(t, 2, old.Queues)

	l := TopicLimits{MaxMessages: 9, Overflow: OverflowReject, DefaultTTL: time.Minute, RetentionAge: -1}
	b, err := json.Marshal(topicMeta{Name: "a", ID: 1, Queues: 2, Limits: &l})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"overflow":"reject"`, "the policy is stored by name")
	var back topicMeta
	require.NoError(t, json.Unmarshal(b, &back))
	require.NotNil(t, back.Limits)
	assert.Equal(t, l, *back.Limits)

	assert.Error(t, json.Unmarshal([]byte(`{"name":"a","limits":{"overflow":"drop-newest"}}`), &back))

	// Limits stored before MaxBytes and Unconsumed read as none of them.
	var before topicMeta
	require.NoError(t, json.Unmarshal([]byte(`{"name":"a","limits":{"max_messages":3,"overflow":"reject"}}`), &before))
	assert.Equal(t, TopicLimits{MaxMessages: 3, Overflow: OverflowReject}, *before.Limits)
	l = TopicLimits{MaxBytes: 1 << 30, Unconsumed: UnconsumedKeep}
	b, err = json.Marshal(topicMeta{Name: "a", Limits: &l})
	require.NoError(t, err)
	assert.Contains(t, string(b), `"unconsumed":"keep"`, "the override is stored by name")
	var now topicMeta
	require.NoError(t, json.Unmarshal(b, &now))
	assert.Equal(t, l, *now.Limits)
}

func TestLevelCuts(t *testing.T) {
	for _, c := range []struct {
		lens   []int64
		excess int64
		want   []int64
	}{
		{[]int64{10, 2, 5}, 0, []int64{0, 0, 0}},
		{[]int64{10, 2, 5}, 3, []int64{3, 0, 0}},
		{[]int64{10, 2, 5}, 6, []int64{5, 0, 1}},
		{[]int64{4, 4, 4}, 2, []int64{0, 1, 1}},
		{[]int64{4, 4, 4}, 12, []int64{4, 4, 4}},
		{[]int64{4, 4, 4}, 20, []int64{4, 4, 4}},
	} {
		got := levelCuts(c.lens, c.excess)
		assert.Equal(t, c.want, got, "lens %v excess %d", c.lens, c.excess)
	}
}
