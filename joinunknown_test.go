package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A join whose write of the group's configuration was applied but whose
// fsync failed is unknown (ErrIndeterminate: the configuration may not
// be durable), and so no refusal (ErrJoinRefused): it matches exactly one
// of the two, unknown winning, and a Start leaves for it. Before, it
// matched both.
func TestJoinGroup_NotDurableIsUnknownOnly(t *testing.T) {
	fs := faultstore.New(store.NewMemory())
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	t.Cleanup(func() { _ = e.Close() })
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	fs.FailSyncs(1)
	_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.Equal(t, int64(1), fs.SyncFailures(), "the join's write was fsynced, and that failed (join: %v)", err)
	assert.ErrorIs(t, err, equeue.ErrIndeterminate)
	assert.NotErrorIs(t, err, equeue.ErrJoinRefused, "unknown, not refused: %v", err)
}
