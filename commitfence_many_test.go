package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestCommit_ManyTopicsFence: one commit over the queues of several topics
// stores those the member holds and refuses, with ErrFenced, a queue of a
// topic it does not read and one past its topic's queues, in a broadcasting
// group and in a clustering one.
func TestCommit_ManyTopicsFence(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	for _, name := range []string{"c", "a", "b", "d"} {
		require.NoError(t, e.CreateTopic(ctx, name, 3))
	}
	subs := []equeue.Subscription{{Topic: "c"}, {Topic: "a"}, {Topic: "b"}}
	for _, model := range []equeue.MessageModel{equeue.Broadcasting, equeue.Clustering} {
		group := "g-" + model.String()
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: group, Member: "m", Model: model, Subscriptions: subs})
		require.NoError(t, err)
		require.Len(t, a.Queues, 9)
		req := &equeue.CommitRequest{Group: group, Member: "m"}
		for _, g := range a.Queues {
			req.Offsets = append(req.Offsets, equeue.OffsetCommit{Grant: g})
		}
		epoch := a.Queues[0].Epoch
		req.Offsets = append(req.Offsets,
			equeue.OffsetCommit{Grant: equeue.Grant{QueueRef: equeue.QueueRef{Topic: "d", Queue: 0}, Epoch: epoch}},
			equeue.OffsetCommit{Grant: equeue.Grant{QueueRef: equeue.QueueRef{Topic: "a", Queue: 3}, Epoch: epoch}})
		err = e.CommitOffsets(ctx, req)
		require.ErrorIs(t, err, equeue.ErrFenced, "%s", model)
		gi, err := e.Group(ctx, group)
		require.NoError(t, err)
		committed := 0
		for _, r := range gi.Queues {
			assert.NotEqual(t, "d", r.Topic, "%s", model)
			if r.Committed == 0 {
				committed++
			}
		}
		assert.Equal(t, 9, committed, "%s: every held queue committed", model)
	}
}
