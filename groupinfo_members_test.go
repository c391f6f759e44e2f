package equeue_test

import (
	"cmp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestGroupInfo_MemberQueuesMatchAssignments: Group lists, for each member,
// the queues of its assignment, those it is handing over included, sorted:
// in a clustering group on
// several topics with a handover under way, and in a broadcasting one.
func TestGroupInfo_MemberQueuesMatchAssignments(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	for _, name := range []string{"c", "a", "b"} {
		require.NoError(t, e.CreateTopic(ctx, name, 3))
	}
	subs := []equeue.Subscription{{Topic: "c"}, {Topic: "a"}, {Topic: "b"}}
	for _, model := range []equeue.MessageModel{equeue.Clustering, equeue.Broadcasting} {
		group := "g-" + model.String()
		// Five members for nine queues; the later joins move queues the
		// first members hold, which they have not released.
		for _, m := range []string{"m1", "m2", "m3", "m4", "m5"} {
			_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: group, Member: m, Model: model, Subscriptions: subs})
			require.NoError(t, err)
		}
		gi, err := e.Group(ctx, group)
		require.NoError(t, err)
		require.Len(t, gi.Members, 5)
		revoking := 0
		for _, mi := range gi.Members {
			a, err := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: group, Member: mi.ID})
			require.NoError(t, err)
			var want []equeue.QueueRef
			for _, g := range slices.Concat(a.Queues, a.Revoking) {
				want = append(want, g.QueueRef)
			}
			revoking += len(a.Revoking)
			slices.SortFunc(want, func(x, y equeue.QueueRef) int {
				return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Queue, y.Queue))
			})
			assert.Equal(t, want, mi.Queues, "%s member %s", model, mi.ID)
		}
		if model == equeue.Clustering {
			assert.Positive(t, revoking, "a handover is under way")
		}
	}
}
