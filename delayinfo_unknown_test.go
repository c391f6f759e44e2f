package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDelayed_ShowsNoSendOfUnknownOutcome: Engine.Delayed read the delay
// index in the store, where a delayed send whose fsync failed is kept, so
// it listed as pending a message whose send was answered ErrIndeterminate
// (which a machine crash may lose), while every other reader shows nothing
// of unknown outcome until a reopen. It is listed after the reopen, which
// keeps it; a send acknowledged before is listed throughout.
func TestDelayed_ShowsNoSendOfUnknownOutcome(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopic(ctx, "t", 1))
			send := func(e *equeue.Engine, body string) error {
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body), Delay: time.Hour}}})
				return err
			}
			require.NoError(t, send(r.E, "acked"))
			r.FS.FailSyncs(1)
			require.ErrorIs(t, send(r.E, "unknown"), equeue.ErrIndeterminate)
			info, err := r.E.Delayed(ctx, 0)
			require.NoError(t, err)
			assert.Equal(t, 1, info.Pending, "only the acknowledged send: %+v", info)
			assert.Len(t, info.Next, 1)
			info, err = r.reopen().Delayed(ctx, 0)
			require.NoError(t, err)
			assert.Equal(t, 2, info.Pending, "the reopen keeps the send of unknown outcome")
		})
	}
}
