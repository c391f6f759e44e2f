package equeue

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// Every command states its exact store cost: what apply writes for a batch
// weighs, by store.Limits.Cost, the sum of its commands' sealed costs (small
// and out-of-line bodies, delay index keys, extra metadata), and dedup IDs
// at most theirs.
func TestCommand_SealedCostIsExact(t *testing.T) {
	ctx := context.Background()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	require.NoError(t, e.CreateTopicWith(ctx, "d", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	require.Positive(t, e.limits.ValueThreshold)
	big := bytes.Repeat([]byte("x"), e.limits.ValueThreshold+1)
	n := 0
	msg := func(body []byte, id string, delay time.Duration) *Message {
		n++
		return &Message{Body: body, ID: id + fmt.Sprint(n), Delay: delay}
	}
	reqs := []*AppendRequest{
		{Topic: "t", Messages: []*Message{msg([]byte("a"), "", 0)}},
		{Topic: "t", Queue: 1, Messages: []*Message{msg(big, "", 0), msg([]byte("b"), "", 0)}},
		{Topic: "d", Messages: []*Message{msg([]byte("c"), "id", 0), msg(big, "id", 0)}},
		{Topic: "t", Messages: []*Message{msg([]byte("e"), "", time.Hour), msg(big, "", time.Hour)}},
		{Topic: "d", Messages: []*Message{msg([]byte("f"), "id", time.Hour)}},
		{Topic: "d", Messages: []*Message{{Body: []byte("h")}, msg(big, "id", 0)}}, // one ID recorded
	}
	var batch []*command
	ops, size := 0, 0
	for _, req := range reqs {
		c, _, err := e.prepareAppend(ctx, req)
		require.NoError(t, err)
		batch = append(batch, c)
		ops, size = ops+c.ops, size+c.bytes
	}
	redrive, _, err := e.prepareAppend(ctx, &AppendRequest{Topic: "d", Messages: []*Message{msg([]byte("g"), "id", 0)}})
	require.NoError(t, err)
	redrive.dedupBypass = true
	redrive.meta = append(redrive.meta, store.MetaOp{Key: redrivenKey("g", 7), Value: []byte{1}})
	redrive.seal(e.limits)
	meta := e.metaCommand([]store.MetaOp{{Key: []byte("k/1"), Value: []byte("v")}, {Key: []byte("k/2"), Delete: true}}, false)
	batch = append(batch, redrive, meta, &command{kind: cmdBarrier})
	ops, size = ops+redrive.ops+meta.ops, size+redrive.bytes+meta.bytes

	require.NoError(t, e.barrier(ctx)) // the writer is idle: apply may read its state
	b := &batchState{now: time.Now()}
	e.apply(b, batch)
	for _, c := range batch {
		require.NoError(t, c.err)
		require.False(t, c.duplicate)
	}
	// Dedup IDs are written in groups, entries of varints: a command's
	// cost bounds the groups it can start and counts each entry at its
	// longest (dedupCost), so the batch weighs at most that. Everything
	// else is exact.
	var dCmds, dOps, dBytes, gOps, gBytes int
	for _, c := range batch {
		if len(c.dedupIDs) > 0 {
			o, n := dedupCost(c.dedupIDs, e.limits.ValueThreshold)
			dCmds, dOps, dBytes = dCmds+1, dOps+o, dBytes+n
		}
	}
	for _, m := range b.meta {
		if bytes.HasPrefix(m.Key, keyDedupGroupPrefix) {
			gOps++
			gBytes += len(m.Key) + len(m.Value)
		}
	}
	require.Equal(t, 4, dCmds)
	assert.Equal(t, 1, gOps, "one group for the dedup topic")
	assert.LessOrEqual(t, gBytes, dBytes)
	gotOps, gotBytes := e.limits.Cost(&store.Batch{Entries: b.entries, Meta: b.meta})
	assert.Equal(t, ops-dOps, gotOps-gOps)
	assert.Equal(t, size-dBytes, gotBytes-gBytes)
}
