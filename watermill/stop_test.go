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
// subscription stops fails once, as one counted attempt, and one waiting to
// be handed out counts none, even while the equeue consumer is slow to stop. Failing
// it before the consumer stopped starting handlers sent it (through the
// retry topic, or in place when orderly) back into the stopping consumer,
// which failed it again at once, attempt after attempt, until it was
// dead-lettered though it was handed out once at most and never Nack'd.
func TestStopCountsOneRun(t *testing.T) {
	for _, tc := range []struct {
		name      string
		unordered bool
		workers   int
		// attempt of the third message when it comes back: with one
		// worker, busy with the second until the consumer stopped, it
		// never ran; with two, it waited to be handed out, which is not
		// counted either.
		third string
	}{
		{"orderly", false, 1, "0"},
		{"unordered", true, 1, "0"},
		{"unordered-waiting", true, 2, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t)
			pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
			var uuids []string
			for i := range 3 {
				msg := message.NewMessage(wm.NewUUID(), fmt.Appendf(nil, "%d", i))
				uuids = append(uuids, msg.UUID)
				require.NoError(t, pub.Publish("stop", msg))
			}
			held := newHeldCommits(e)
			t.Cleanup(held.open)
			thirdRuns := make(chan struct{})
			var once sync.Once
			opts := patientConsumer
			opts.Hooks = []equeue.Hooks{{BeforeHandle: func(_ context.Context, m *equeue.Message) {
				if m.Offset == 2 {
					once.Do(func() { close(thirdRuns) })
				}
			}}}
			cfg := eqwm.SubscriberConfig{Broker: held, ConsumerGroup: "g", Unordered: tc.unordered, Concurrency: tc.workers,
				MaxAttempts: 3, NackResendDelay: time.Millisecond, Consumer: opts}
			first, err := eqwm.NewSubscriber(cfg)
			require.NoError(t, err)
			ch, err := first.Subscribe(ctxT(t), "stop")
			require.NoError(t, err)

			// One worker hands the first two messages out one after the
			// other, two workers at once, in either order.
			out := map[string]*message.Message{}
			for range tc.workers {
				m := receive(t, ch)
				out[m.UUID] = m
			}
			require.Contains(t, out, uuids[0])
			held.armed.Store(true)
			out[uuids[0]].Ack() // the next periodic commit has something to store, and waits
			if tc.workers == 1 {
				m := receive(t, ch)
				out[m.UUID] = m
			}
			require.Contains(t, out, uuids[1]) // not Ack'd
			require.Len(t, out, 2)
			select {
			case <-held.held:
			case <-time.After(10 * time.Second):
				t.Fatal("no offset commit within 10s")
			}
			if tc.workers > 1 {
				select {
				case <-thirdRuns: // its handler, on the worker the Ack freed, waits to hand it out
				case <-time.After(10 * time.Second):
					t.Fatal("third message not handled within 10s")
				}
			}

			closed := make(chan error, 1)
			go func() { closed <- first.Close() }()
			// While the consumer is held, nothing may fail a message
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
			require.Zero(t, stored(t, e, equeue.DLQTopic("g")), "a message handed out once at most and never Nack'd was dead-lettered")

			cfg.Broker = e
			second := newSubscriber(t, cfg)
			ch, err = second.Subscribe(ctxT(t), "stop")
			require.NoError(t, err)
			got := map[string]string{} // UUID -> attempt
			for range 2 {
				m := receive(t, ch)
				got[m.UUID] = m.Metadata.Get(eqwm.MetadataAttempt)
				m.Ack()
			}
			assert.Equal(t, map[string]string{uuids[1]: "1", uuids[2]: tc.third}, got, "one failed run each at most")
			assertNothing(t, ch, 100*time.Millisecond)
		})
	}
}

// TestStopNeverDeadLetters: a message a stop interrupts goes back to the
// group even on its last attempt (MaxAttempts 1 here), whether it was
// handed out and not Ack'd or still waited to be handed out; only a Nack
// moves it to the dead letters. The stop counts an attempt, but for a
// message that waited to be handed out.
func TestStopNeverDeadLetters(t *testing.T) {
	for _, tc := range []struct {
		name      string
		unordered bool
		handedOut bool
	}{
		{"orderly-waiting", false, false},
		{"orderly-handed-out", false, true},
		{"unordered-waiting", true, false},
		{"unordered-handed-out", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := openEngine(t)
			pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
			msg := message.NewMessage(wm.NewUUID(), []byte("x"))
			require.NoError(t, pub.Publish("last", msg))
			runs := make(chan struct{}, 1)
			opts := fastConsumer
			opts.Hooks = []equeue.Hooks{{BeforeHandle: func(context.Context, *equeue.Message) {
				select {
				case runs <- struct{}{}:
				default:
				}
			}}}
			cfg := eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", Unordered: tc.unordered, MaxAttempts: 1, Consumer: opts}
			first, err := eqwm.NewSubscriber(cfg)
			require.NoError(t, err)
			ch, err := first.Subscribe(ctxT(t), "last")
			require.NoError(t, err)
			if tc.handedOut {
				assert.Equal(t, msg.UUID, receive(t, ch).UUID) // neither Ack'd nor Nack'd
			} else {
				select {
				case <-runs: // its handler waits for the application to read it
				case <-time.After(10 * time.Second):
					t.Fatal("message not handled within 10s")
				}
			}
			require.NoError(t, first.Close())
			require.Zero(t, stored(t, e, equeue.DLQTopic("g")), "dead-lettered by the stop")

			second := newSubscriber(t, cfg)
			ch, err = second.Subscribe(ctxT(t), "last")
			require.NoError(t, err)
			m := receive(t, ch)
			assert.Equal(t, msg.UUID, m.UUID)
			// An interrupted run counts; one whose message the
			// subscription never handed out does not.
			wantAttempt := "1"
			if !tc.handedOut {
				wantAttempt = "0"
			}
			assert.Equal(t, wantAttempt, m.Metadata.Get(eqwm.MetadataAttempt), "attempts counted by the stop")
			m.Nack() // on its last attempt: a Nack dead-letters it
			require.Eventually(t, func() bool { return stored(t, e, equeue.DLQTopic("g")) == 1 }, 10*time.Second, 5*time.Millisecond)
			assertNothing(t, ch, 100*time.Millisecond)
		})
	}
}

// TestStopDoesNotCountAWaitingOrderlyMessage: an orderly subscription's
// message that waited to be handed out when the subscription stopped never
// reached the application, so the stop does not count it as an attempt: it
// comes back as a first delivery and still gets MaxAttempts deliveries
// before a Nack dead-letters it.
func TestStopDoesNotCountAWaitingOrderlyMessage(t *testing.T) {
	stopDoesNotCountAWaitingMessage(t, eqwm.SubscriberConfig{})
}

// TestStopDoesNotCountAWaitingUnorderedMessage is
// TestStopDoesNotCountAWaitingOrderlyMessage for unordered subscriptions,
// of a clustering group (whose failures go through the retry topic) and of
// a broadcasting one (whose failures are retried locally).
func TestStopDoesNotCountAWaitingUnorderedMessage(t *testing.T) {
	t.Run("clustering", func(t *testing.T) {
		stopDoesNotCountAWaitingMessage(t, eqwm.SubscriberConfig{Unordered: true})
	})
	t.Run("broadcasting", func(t *testing.T) {
		cfg := eqwm.SubscriberConfig{Unordered: true, MemberID: "m"}
		cfg.Consumer.Model = equeue.Broadcasting
		stopDoesNotCountAWaitingMessage(t, cfg)
	})
}

// stopDoesNotCountAWaitingMessage stops, three times, a subscription (with
// cfg's mode, model and member ID) whose one message waits to be handed
// out, then checks that the message comes back as a first delivery.
func stopDoesNotCountAWaitingMessage(t *testing.T, mode eqwm.SubscriberConfig) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	msg := message.NewMessage(wm.NewUUID(), []byte("x"))
	require.NoError(t, pub.Publish("waiting", msg))
	runs := make(chan struct{}, 1)
	opts := patientConsumer
	opts.Model = mode.Consumer.Model
	opts.Hooks = []equeue.Hooks{{BeforeHandle: func(context.Context, *equeue.Message) {
		select {
		case runs <- struct{}{}:
		default:
		}
	}}}
	cfg := eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", MemberID: mode.MemberID, Unordered: mode.Unordered,
		MaxAttempts: 2, NackResendDelay: time.Millisecond, Consumer: opts}
	for range 3 { // three stops while it waits: none counts
		first, err := eqwm.NewSubscriber(cfg)
		require.NoError(t, err)
		_, err = first.Subscribe(ctxT(t), "waiting")
		require.NoError(t, err)
		select {
		case <-runs: // its handler waits for the application to read it
		case <-time.After(10 * time.Second):
			t.Fatal("message not handled within 10s")
		}
		require.NoError(t, first.Close())
	}

	second := newSubscriber(t, cfg)
	ch, err := second.Subscribe(ctxT(t), "waiting")
	require.NoError(t, err)
	m := receive(t, ch)
	assert.Equal(t, msg.UUID, m.UUID)
	assert.Equal(t, "0", m.Metadata.Get(eqwm.MetadataAttempt), "never handed out, yet counted")
	m.Nack() // its first delivery: delivered again, not dead-lettered
	m = receive(t, ch)
	assert.Equal(t, msg.UUID, m.UUID)
	assert.Equal(t, "1", m.Metadata.Get(eqwm.MetadataAttempt))
	m.Ack()
	assertNothing(t, ch, 100*time.Millisecond)
	assert.Zero(t, stored(t, e, equeue.DLQTopic("g")), "dead-lettered after one delivery of MaxAttempts 2")
}
