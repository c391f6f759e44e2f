package watermill_test

import (
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	eqwm "github.com/equeue-go/equeue/watermill"
)

// TestPublisherCloseCutsABlockedMarshal: Close returns after CloseTimeout
// even while a Marshal call never returns; once that Marshal returns, its
// Publish fails with ErrPublisherClosed and publishes nothing. Before,
// Close waited for the Publish without end: only the contexts of sends
// were ended at CloseTimeout, and a Marshal has none.
func TestPublisherCloseCutsABlockedMarshal(t *testing.T) {
	e := openEngine(t)
	b := &countingBroker{Broker: e}
	m := blockingMarshaler{block: wm.NewUUID(), entered: make(chan struct{}), release: make(chan struct{})}
	released := false
	release := func() {
		if !released {
			released = true
			close(m.release)
		}
	}
	t.Cleanup(release)
	pub, err := eqwm.NewPublisher(eqwm.PublisherConfig{Broker: b, Marshaler: m, CloseTimeout: 50 * time.Millisecond})
	require.NoError(t, err)
	// The topic exists and a first message is stored: what Close cuts is
	// the Marshal alone.
	require.NoError(t, pub.Publish("pmarshal", message.NewMessage(wm.NewUUID(), []byte("first"))))
	require.Equal(t, int32(1), b.appended.Load())

	published := make(chan error, 1)
	go func() { published <- pub.Publish("pmarshal", message.NewMessage(m.block, []byte("x"))) }()
	<-m.entered
	closed := make(chan error, 1)
	go func() { closed <- pub.Close() }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return within 10s while a Marshal was blocked")
	}
	release()
	err = <-published
	require.ErrorIs(t, err, eqwm.ErrPublisherClosed)
	assert.Contains(t, err.Error(), m.block, "the error names the message")
	assert.Equal(t, int32(1), b.appended.Load(), "the message whose Marshal Close cut was sent after Close returned")
	assert.Equal(t, int64(1), stored(t, e, "pmarshal"))
}
