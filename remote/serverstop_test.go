package remote_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// panickyAsyncBackend is an engine whose AppendAsync, which it owns (so the
// append stream takes it), panics before it answers: a fault in a Backend
// of the application's.
type panickyAsyncBackend struct{ *equeue.Engine }

func (b *panickyAsyncBackend) AppendAsync(context.Context, *equeue.AppendRequest, func(equeue.AppendResult, error)) {
	panic("remote test: AppendAsync fails")
}

func (b *panickyAsyncBackend) FastPathOwner() any { return b }

// An append of the stream whose backend panicked was answered as an
// internal error but kept its slot of MaxInFlight: after MaxInFlight of
// them the server refused every call as busy, for good.
func TestAppendStream_PanicGivesItsInFlightSlotBack(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const limit = 2
	srv, err := remote.NewBackendServer(&panickyAsyncBackend{e}, &remote.ServerOptions{MaxInFlight: limit})
	require.NoError(t, err)
	c := dial(t, serve(t, srv, "").addr, nil)
	for i := range limit {
		_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.Error(t, err, "append %d", i)
		assert.NotErrorIs(t, err, remote.ErrBusy, "append %d", i)
	}
	// Busy is retried until the call's context ends: bound it.
	tctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err = c.Topics(tctx)
	require.NoError(t, err, "the panicked appends still hold every slot")
}
