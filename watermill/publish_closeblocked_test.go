package watermill_test

import (
	"context"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// stuckAppends is a Broker whose appends wait for their context to end,
// as an append to a broker that stopped answering does.
type stuckAppends struct {
	equeue.Broker
	entered chan struct{}
}

func (b *stuckAppends) Append(ctx context.Context, _ *equeue.AppendRequest) (equeue.AppendResult, error) {
	b.entered <- struct{}{}
	<-ctx.Done()
	return equeue.AppendResult{}, ctx.Err()
}

// TestPublisherCloseEndsAStuckPublish: Close waits CloseTimeout for the
// Publish calls in progress, then ends their sends' contexts: the stuck
// Publish returns an error matching ErrPublisherClosed and Close returns.
// Before, Close waited for the Publish without end, though the message's
// context (here context.Background) never ended.
func TestPublisherCloseEndsAStuckPublish(t *testing.T) {
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "stuck", 1))
	b := &stuckAppends{Broker: e, entered: make(chan struct{}, 1)}
	pub, err := eqwm.NewPublisher(eqwm.PublisherConfig{Broker: b, CloseTimeout: 50 * time.Millisecond})
	require.NoError(t, err)

	published := make(chan error, 1)
	go func() { published <- pub.Publish("stuck", message.NewMessage(wm.NewUUID(), []byte("x"))) }()
	<-b.entered
	closed := make(chan error, 1)
	go func() { closed <- pub.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s while a Publish was stuck")
	}
	err = <-published
	require.ErrorIs(t, err, eqwm.ErrPublisherClosed)
	assert.ErrorIs(t, err, context.Canceled, "the send's own error is kept")
}
