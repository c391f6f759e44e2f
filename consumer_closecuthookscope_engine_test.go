package equeue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// cutBroadcaster opens an engine whose one broadcasting consumer handled
// a message and had its close cut before its final commit: e.Close redoes
// that close.
func cutBroadcaster(t *testing.T) *equeue.Engine {
	t.Helper()
	e, err := equeue.Open(t.TempDir(), &equeue.Options{SessionTimeout: time.Hour})
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1")})
	require.NoError(t, err)
	var handled atomic.Int32
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "g", ID: "a", Model: equeue.Broadcasting,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, CommitInterval: time.Hour,
		Handler: func(context.Context, *equeue.Message) error { handled.Add(1); return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	eventually(t, waitLong, func() bool { return handled.Load() == 1 }, "the consumer handled the message")
	cut, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, c.CloseContext(cut), context.Canceled, "its final commit and leave are cut")
	return e
}

// The hook of a cut close's redo belongs to one engine: the redo of
// another engine's Close does not run it, so that tests of two engines
// (in parallel, say) do not see each other's. Before, it was one hook for
// the whole package, and the other engine's redo ran it.
func TestEngineClose_CutCloseRedoHookIsTheEnginesOwn(t *testing.T) {
	mine, other := cutBroadcaster(t), cutBroadcaster(t)
	var ranMine, ranOther atomic.Int32
	equeue.OnCutCloseRedo(mine, func() { ranMine.Add(1) })
	equeue.OnCutCloseRedo(other, func() { ranOther.Add(1) })

	require.NoError(t, other.Close())
	assert.Equal(t, int32(1), ranOther.Load(), "the other engine's redo ran its own hook")
	assert.Zero(t, ranMine.Load(), "the other engine's redo ran no hook of this one")
	require.NoError(t, mine.Close())
	assert.Equal(t, int32(1), ranMine.Load(), "this engine's redo ran its hook")
	assert.Equal(t, int32(1), ranOther.Load(), "this engine's redo ran no hook of the other")
}
