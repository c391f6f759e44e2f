package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
)

// A send refused by a failed write, then the topic deleted and made again
// under the same name: the new topic starts at offset 0, the refused ID is
// no duplicate there, and a reopen shows only what the new topic was
// answered stored.
func TestHuntStore_FailedWriteThenDeleteTopicAndRecreate(t *testing.T) {
	r := newFaultRig(t, "badger", nil)
	o := equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", o))
	send := func(id string) (equeue.AppendResult, error) {
		return r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t",
			Messages: []*equeue.Message{{Topic: "t", ID: id, Body: []byte(id)}}})
	}
	_, err := send("a")
	require.NoError(t, err)
	r.FS.FailWrites(1)
	_, err = send("b")
	require.ErrorIs(t, err, faultstore.ErrInjected)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate)

	require.NoError(t, r.E.DeleteTopic(ctxBG, "t"))
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "t", o))
	for _, id := range []string{"a", "b"} {
		res, err := send(id)
		require.NoError(t, err)
		assert.False(t, res.Duplicate, "%s: the deleted topic's window is gone", id)
	}
	assert.Equal(t, []string{"a", "b"}, queueBodies(t, r.E, "t", 0))
	r.reopen()
	assert.Equal(t, []string{"a", "b"}, queueBodies(t, r.E, "t", 0))
	res, err := send("b")
	require.NoError(t, err)
	assert.True(t, res.Duplicate)
	assert.Equal(t, int64(1), res.FirstOffset)
}
