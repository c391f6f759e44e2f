package equeue_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// tagExpr is "t0 || t1 || ..." of n distinct tags.
func tagExpr(n int) string {
	tags := make([]string, n)
	for i := range tags {
		tags[i] = fmt.Sprint("t", i)
	}
	return strings.Join(tags, " || ")
}

// A filter expression longer than equeue.MaxFilterBytes is refused with
// ErrInvalidFilter by every call that takes one, before any work: parsing
// one of some 600 KB (80,000 tags) took 23 s of CPU, so a client sending
// one with each pull could hold the broker's cores. One within the bound,
// of many tags with repeats, selects as before.
func TestFilter_LongerThanTheBoundIsRefused(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	long := tagExpr(equeue.MaxFilterBytes / 4)
	require.Greater(t, len(long), equeue.MaxFilterBytes)
	assert.ErrorIs(t, equeue.ValidateFilter(long), equeue.ErrInvalidFilter)
	_, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: long})
	assert.ErrorIs(t, err, equeue.ErrInvalidFilter)
	_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t", Filter: long}}})
	assert.ErrorIs(t, err, equeue.ErrInvalidFilter)

	// Within the bound: many tags, each twice, select their messages only.
	var within string
	for n := 1; ; n *= 2 {
		expr := tagExpr(n) + " || " + tagExpr(n)
		if len(expr) > equeue.MaxFilterBytes {
			break
		}
		within = expr
	}
	require.NoError(t, equeue.ValidateFilter(within))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Tag: "t3", Body: []byte("a")}, {Tag: "other", Body: []byte("b")}, {Tag: "t0", Body: []byte("c")}}})
	require.NoError(t, err)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: within})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"a", "c"}, bodies)
}
