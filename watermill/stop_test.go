package watermill_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// heldCommits is a Broker whose offset commits wait, once armed, until
// released. Consumer.Close waits for a periodic commit in progress before it
// stops its queues, so a held commit holds the consumer running, as a slow
// scheduler would, after its Subscriber was told to stop.
type heldCommits struct {
	equeue.Broker
	armed   atomic.Bool
	once    sync.Once
	held    chan struct{} // closed when the first armed commit waits
	release chan struct{} // closed by open
	opened  sync.Once
}

func newHeldCommits(b equeue.Broker) *heldCommits {
	return &heldCommits{Broker: b, held: make(chan struct{}), release: make(chan struct{})}
}

// open lets every commit through.
func (h *heldCommits) open() { h.opened.Do(func() { close(h.release) }) }

func (h *heldCommits) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	if h.armed.Load() {
		h.once.Do(func() { close(h.held) })
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.Broker.CommitOffsets(ctx, req)
}

// stored counts the messages of topic, 0 when it does not exist.
func stored(t *testing.T, e *equeue.Engine, topic string) int64 {
	t.Helper()
	ti, err := e.Topic(ctxT(t), topic)
	if errors.Is(err, equeue.ErrTopicNotFound) {
		return 0
	}
	require.NoError(t, err)
	return ti.Messages
}

// TestStopCountsOneRun: a message handed out and not Ack'd when its
// subscription stops fails once, as one counted attempt, even while the
// equeue consumer is slow to stop. Failing it before the consumer stopped
// starting handlers sent it through the retry topic back into the stopping
// consumer, which failed it again at once, attempt after attempt, until it
// was dead-lettered though it was handed out only once and never Nack'd.
func TestStopCountsOneRun(t *testing.T) {
	for _, unordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("unordered=%v", unordered), func(t *testing.T) {
			e := openEngine(t)
			pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
			var uuids []string
			for i := range 2 {
				msg := message.NewMessage(wm.NewUUID(), fmt.Appendf(nil, "%d", i))
				uuids = append(uuids, msg.UUID)
				require.NoError(t, pub.Publish("stop", msg))
			}
			held := newHeldCommits(e)
			t.Cleanup(held.open)
			cfg := eqwm.SubscriberConfig{Broker: held, ConsumerGroup: "g", Unordered: unordered, Concurrency: 1,
				MaxAttempts: 3, NackResendDelay: time.Millisecond, Consumer: patientConsumer}
			first, err := eqwm.NewSubscriber(cfg)
			require.NoError(t, err)
			ch, err := first.Subscribe(ctxT(t), "stop")
			require.NoError(t, err)

			m := receive(t, ch)
			require.Equal(t, uuids[0], m.UUID)
			held.armed.Store(true)
			m.Ack() // the next periodic commit has something to store, and waits
			m = receive(t, ch)
			require.Equal(t, uuids[1], m.UUID) // not Ack'd
			select {
			case <-held.held:
			case <-time.After(10 * time.Second):
				t.Fatal("no offset commit within 10s")
			}

			closed := make(chan error, 1)
			go func() { closed <- first.Close() }()
			// While the consumer is held, nothing may fail the message
			// again and again until it is dead-lettered.
			assert.Never(t, func() bool { return stored(t, e, equeue.DLQTopic("g")) > 0 }, 300*time.Millisecond, 5*time.Millisecond,
				"dead-lettered while the subscription stopped")
			held.open()
			select {
			case err := <-closed:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				t.Fatal("Close did not return within 20s")
			}
			assertClosed(t, ch)
			require.Zero(t, stored(t, e, equeue.DLQTopic("g")), "a message handed out once and never Nack'd was dead-lettered")

			cfg.Broker = e
			second := newSubscriber(t, cfg)
			ch, err = second.Subscribe(ctxT(t), "stop")
			require.NoError(t, err)
			m = receive(t, ch)
			assert.Equal(t, uuids[1], m.UUID)
			assert.Equal(t, "1", m.Metadata.Get(eqwm.MetadataAttempt), "one handing out, one failed run")
			m.Ack()
			assertNothing(t, ch, 100*time.Millisecond)
		})
	}
}
