package remote_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A failed fsync on the server's engine reaches a remote sender as on the
// engine: the send it covered is unknown, the next is refused as
// ErrStoreFailed (not stored).
func TestErrors_FailedFsyncOverTheWire(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	_, c := setup(t, &equeue.Options{Store: fs})
	require.NoError(t, c.CreateTopic(ctx, "t", 1))
	fs.FailSyncs(1)
	_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("b")}}})
	require.ErrorIs(t, err, equeue.ErrStoreFailed)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate)
}
