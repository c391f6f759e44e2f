package remote_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A pull or a join whose filter expression is longer than
// equeue.MaxFilterBytes is refused by the broker with ErrInvalidFilter
// (InvalidArgument), a clear error the client matches, and the broker
// serves the next call.
func TestServer_LongFilterIsInvalidFilter(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	long := "a" + strings.Repeat(" || a", equeue.MaxFilterBytes/5+1)
	require.Greater(t, len(long), equeue.MaxFilterBytes)
	_, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: long})
	assert.ErrorIs(t, err, equeue.ErrInvalidFilter)
	_, err = c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t", Filter: long}}})
	assert.ErrorIs(t, err, equeue.ErrInvalidFilter)
	_, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: "a"})
	assert.NoError(t, err)
}
