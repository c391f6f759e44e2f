package watermill_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// refusingOffsetsBroker refuses every FetchOffsets until heal is closed,
// telling its first refusal on refused.
type refusingOffsetsBroker struct {
	equeue.Broker
	once    sync.Once
	refused chan struct{}
	heal    chan struct{}
}

func (b *refusingOffsetsBroker) FetchOffsets(ctx context.Context, group, member string, gs []equeue.Grant) ([]equeue.OffsetCommit, error) {
	select {
	case <-b.heal:
		return b.Broker.FetchOffsets(ctx, group, member, gs)
	default:
	}
	b.once.Do(func() { close(b.refused) })
	return nil, errors.New("offsets refused")
}

// TestSubscriberCloseEndsASubscribeWhoseStartWaits: a Subscribe whose
// consumer's Start waits for its queues to start (their offsets cannot be
// fetched: the store refuses them) under a ctx that never ends does not
// hold the Subscriber's Close: Close ends the Subscribe, which returns a
// channel that Close closed, or ErrSubscriberClosed.
func TestSubscriberCloseEndsASubscribeWhoseStartWaits(t *testing.T) {
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "startwaits", 1))
	b := &refusingOffsetsBroker{Broker: e, refused: make(chan struct{}), heal: make(chan struct{})}
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: b, Consumer: fastConsumer})
	type subscribed struct {
		ch  <-chan *message.Message
		err error
	}
	done := make(chan subscribed, 1)
	go func() {
		ch, err := sub.Subscribe(context.Background(), "startwaits")
		done <- subscribed{ch, err}
	}()
	select {
	case <-b.refused:
	case s := <-done:
		t.Fatalf("Subscribe returned before a FetchOffsets: %v", s.err)
	}
	closed := make(chan error, 1)
	go func() { closed <- sub.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(15 * time.Second):
		close(b.heal) // let the Start return so the test ends
		require.NoError(t, <-closed)
		t.Fatal("Close waited for a Subscribe whose Start waited for its queues")
	}
	s := <-done
	if s.err != nil {
		assert.ErrorIs(t, s.err, eqwm.ErrSubscriberClosed)
		return
	}
	_, ok := <-s.ch
	assert.False(t, ok, "the channel of a Subscribe that Close ended is open")
}
