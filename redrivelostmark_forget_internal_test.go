package equeue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// lostMarksEngine opens an engine in memory with n dead letters of group
// g, each with a lost (garbled) redriven mark that a listing has noted.
func lostMarksEngine(t *testing.T, g string, n int) (*Engine, *store.Memory) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	mem := store.NewMemory()
	e, err := Open("", &Options{Store: mem, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	dlq := DLQTopic(g)
	var ops []store.MetaOp
	for i := range n {
		m := &Message{Body: fmt.Appendf(nil, "dl%d", i)}
		m.SetSysProperties(map[string]string{SysOriginTopic: "t", SysOriginQueue: "0", SysOriginOffset: fmt.Sprint(i)})
		_, err := e.Append(allowInternal(ctx, dlq), &AppendRequest{Topic: dlq, Messages: []*Message{m}})
		require.NoError(t, err)
		ops = append(ops, store.MetaOp{Key: redrivenKey(g, int64(i)), Value: []byte{0}}) // garbled
	}
	require.NoError(t, mem.Write(&store.Batch{Meta: ops}))
	dls, err := e.ListDeadLetters(ctx, g, ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, n)
	for _, dl := range dls {
		require.True(t, dl.Redriven, "a lost mark is listed redriven")
	}
	require.Equal(t, n, lostRedrivenEntries(e), "each lost mark noted once")
	return e, mem
}

func lostRedrivenEntries(e *Engine) int {
	n := 0
	e.lostRedriven.Range(func(any, any) bool { n++; return true })
	return n
}

// The engine's note of each lost redriven mark (lostRedriven) goes with
// the mark: when the dead-letter topic is deleted, when retention or a
// drop-oldest limit trims the dead letters it covers, and when the group
// is deleted. Before, every note stayed for the engine's life.
func TestLostRedrivenNotes_GoWithTheirMarks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	t.Run("DeleteTopic", func(t *testing.T) {
		e, _ := lostMarksEngine(t, "g", 4)
		require.NoError(t, e.DeleteTopic(ctx, DLQTopic("g")))
		assert.Zero(t, lostRedrivenEntries(e))
	})
	t.Run("trim", func(t *testing.T) {
		e, mem := lostMarksEngine(t, "g", 4)
		require.NoError(t, e.SetTopicLimits(ctx, DLQTopic("g"), TopicLimits{MaxMessages: 1, Overflow: OverflowDropOldest}))
		waitFor(t, func() bool { _, err := mem.GetMeta(redrivenKey("g", 2)); return err != nil },
			"the trim deletes the marks of the dead letters it drops")
		assert.Equal(t, 1, lostRedrivenEntries(e), "only the kept dead letter's note is left")
		_, ok := e.lostRedriven.Load(string(redrivenKey("g", 3)))
		assert.True(t, ok, "the kept dead letter's lost mark is still noted")
	})
	t.Run("DeleteGroup", func(t *testing.T) {
		e, _ := lostMarksEngine(t, "g", 4)
		require.NoError(t, e.DeleteGroup(ctx, "g", DeleteGroupOptions{}))
		assert.Zero(t, lostRedrivenEntries(e))
	})
	t.Run("DeleteGroupOfMarksLeftFromAnotherTopic", func(t *testing.T) {
		// Marks of the group whose dead-letter topic is gone (a failed
		// delete of them left them), noted by a read: the group's
		// deletion deletes them with its keys.
		e, mem := lostMarksEngine(t, "g", 2)
		require.NoError(t, mem.Write(&store.Batch{Meta: []store.MetaOp{{Key: redrivenKey("g", 9), Value: []byte{0}}}}))
		require.NoError(t, e.scanRedriven(func(string, int64, []byte) {}))
		require.Equal(t, 3, lostRedrivenEntries(e))
		require.NoError(t, e.DeleteGroup(ctx, "g", DeleteGroupOptions{}))
		assert.Zero(t, lostRedrivenEntries(e))
	})
}
