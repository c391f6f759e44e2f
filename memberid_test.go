package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A member ID holding a NUL byte cannot be told apart in the store keys of
// a broadcasting member's offsets, which separate their parts with NUL: the
// join is refused, and the engine still opens afterwards.
func TestJoinGroup_MemberIDWithNULRefused(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, model := range []equeue.MessageModel{equeue.Clustering, equeue.Broadcasting} {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g" + model.String(), Member: "a\x00b", Model: model,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "%s", model)
		if err == nil {
			// Store the member's start offsets, as a consumer does.
			_, err = e.FetchOffsets(ctx, a.Group, a.Member, a.Queues)
			require.NoError(t, err)
		}
	}
	reopen() // fails when a stored offset key cannot be read back
}
