package watermill_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// blockingUnmarshaler holds every Unmarshal until release is closed; the
// first one closes entered, and returned counts those that returned.
type blockingUnmarshaler struct {
	entered  chan struct{}
	once     *sync.Once
	release  chan struct{}
	returned *sync.WaitGroup
}

func (b blockingUnmarshaler) Unmarshal(m *equeue.Message) (*message.Message, error) {
	b.returned.Add(1)
	defer b.returned.Done()
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return eqwm.DefaultMarshaler{}.Unmarshal(m)
}

// TestSubscriberCloseWithABlockedUnmarshal: Close returns while an
// Unmarshal never returns (the equeue consumer gives up on a handler that
// outlives both of its stop waits), orderly and unordered, and once that
// Unmarshal returns the message is not handed out on the closed channel.
func TestSubscriberCloseWithABlockedUnmarshal(t *testing.T) {
	for _, unordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("unordered=%v", unordered), func(t *testing.T) {
			e := openEngine(t)
			pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
			require.NoError(t, pub.Publish("unblocked", message.NewMessage(wm.NewUUID(), []byte("x"))))
			u := blockingUnmarshaler{entered: make(chan struct{}), once: new(sync.Once),
				release: make(chan struct{}), returned: new(sync.WaitGroup)}
			sub, err := eqwm.NewSubscriber(eqwm.SubscriberConfig{Broker: e, Unordered: unordered,
				Unmarshaler: u, Consumer: fastConsumer})
			require.NoError(t, err)
			ch, err := sub.Subscribe(ctxT(t), "unblocked")
			require.NoError(t, err)
			<-u.entered

			closed := make(chan error, 1)
			go func() { closed <- sub.Close() }()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(10 * time.Second):
				close(u.release)
				t.Fatal("Close did not return within 10s while an Unmarshal was blocked")
			}
			close(u.release)
			u.returned.Wait()
			_, ok := <-ch
			require.False(t, ok, "a message was handed out after Close returned")
		})
	}
}
