package watermill_test

import (
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/tests"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// Watermill's multiplied subscriber (used by some suite tests) leaves
		// its fan-in goroutines blocked on an output channel nobody reads
		// (TestPublishSubscribeInOrder closes it before it subscribes).
		goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/internal/subscriber.(*multiplier).Subscribe.func2"),
		goleak.IgnoreAnyFunction("github.com/ThreeDotsLabs/watermill/internal/subscriber.(*multiplier).Subscribe.func3"),
	)
}

// fastConsumer keeps the equeue consumers of the tests responsive. A
// stopping subscription waits ShutdownTimeout for its running handlers.
var fastConsumer = equeue.ConsumerOptions{
	HeartbeatInterval: 200 * time.Millisecond,
	CommitInterval:    100 * time.Millisecond,
	PullWait:          2 * time.Second,
	ShutdownTimeout:   50 * time.Millisecond,
}

// patientConsumer is fastConsumer with a ShutdownTimeout that surely lets a
// handler the stop cancelled return before the consumer gives up on it (then
// its failed run would not be counted): for the tests that count attempts.
var patientConsumer = func() equeue.ConsumerOptions {
	o := fastConsumer
	o.ShutdownTimeout = 500 * time.Millisecond
	return o
}()

// openEngine returns an in-memory engine closed when t ends.
func openEngine(t testing.TB) *equeue.Engine {
	t.Helper()
	e, err := equeue.Open("", &equeue.Options{InMemory: true, SessionTimeout: 2 * time.Second})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e
}

// pubSubFactory builds Watermill constructors over one shared engine.
type pubSubFactory struct {
	e      *equeue.Engine
	queues int
	tune   func(*eqwm.SubscriberConfig)
}

func (f pubSubFactory) pubSub(t *testing.T, group string) (message.Publisher, message.Subscriber) {
	t.Helper()
	pub, err := eqwm.NewPublisher(eqwm.PublisherConfig{Broker: f.e, Queues: f.queues})
	require.NoError(t, err)
	cfg := eqwm.SubscriberConfig{Broker: f.e, ConsumerGroup: group, Queues: f.queues, Consumer: fastConsumer}
	if f.tune != nil {
		f.tune(&cfg)
	}
	sub, err := eqwm.NewSubscriber(cfg)
	require.NoError(t, err)
	// Some suite tests never close what they create; Close is idempotent.
	t.Cleanup(func() {
		_ = pub.Close()
		_ = sub.Close()
	})
	return pub, sub
}

func (f pubSubFactory) constructor(t *testing.T) (message.Publisher, message.Subscriber) {
	return f.pubSub(t, "")
}

func (f pubSubFactory) groupConstructor(t *testing.T, group string) (message.Publisher, message.Subscriber) {
	return f.pubSub(t, group)
}

// features equeue provides with topics of several queues.
var features = tests.Features{
	ConsumerGroups:      true,
	ExactlyOnceDelivery: false,
	// Messages of one topic are spread over its queues and queues are
	// consumed in parallel: order holds per queue only. See TestPubSubOrdered.
	GuaranteedOrder: false,
	// Messages are stored in the engine, not in the Subscriber: a new
	// Subscriber (another instance) reads what was published before it.
	Persistent: true,
	// Without a ConsumerGroup every Subscribe call is a new group starting
	// at the earliest message.
	NewSubscriberReceivesOldMessages: true,
}

// TestPubSub runs Watermill's universal Pub/Sub suite: Subscribe calls of
// the plain constructor fan out (each its own group), the consumer-group
// constructor's share a named group.
func TestPubSub(t *testing.T) {
	f := pubSubFactory{e: openEngine(t)}
	tests.TestPubSub(t, features, f.constructor, f.groupConstructor)
}

// TestPubSubOrdered runs the suite's order tests on one-queue topics with
// orderly subscribers: one queue is one ordered log, and an orderly
// consumer delivers its next message only after the previous one was Ack'd.
func TestPubSubOrdered(t *testing.T) {
	f := pubSubFactory{e: openEngine(t), queues: 1}
	ordered := features
	ordered.GuaranteedOrder = true
	for name, fn := range map[string]func(*testing.T, tests.TestContext, tests.PubSubConstructor){
		"TestPublishSubscribeInOrder": tests.TestPublishSubscribeInOrder,
		"TestNoAck":                   tests.TestNoAck,
		"TestResendOnError":           tests.TestResendOnError,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, tests.TestContext{TestID: tests.NewTestID(), Features: ordered}, f.constructor)
		})
	}
}

// TestPubSubSharedGroup runs the suite again with every subscriber of the
// plain constructor in one consumer group (scoped per topic): a Subscriber
// then continues where an earlier one of the group stopped, messages it did
// not Ack are delivered again to the group, and TestConcurrentSubscribe's
// 50 subscribers share the topic's queues through rebalances. A new
// subscriber does not receive what the group already consumed, so
// NewSubscriberReceivesOldMessages does not hold here.
func TestPubSubSharedGroup(t *testing.T) {
	f := pubSubFactory{e: openEngine(t), tune: func(c *eqwm.SubscriberConfig) { c.GroupName = eqwm.TopicScopedGroup }}
	shared := features
	shared.NewSubscriberReceivesOldMessages = false
	tests.TestPubSub(t, shared,
		func(t *testing.T) (message.Publisher, message.Subscriber) { return f.pubSub(t, "shared") },
		f.groupConstructor)
}

// TestPubSubUnordered runs the suite with unordered subscribers, whose
// Nack'd messages travel through the group's retry topic.
func TestPubSubUnordered(t *testing.T) {
	f := pubSubFactory{e: openEngine(t), tune: func(c *eqwm.SubscriberConfig) { c.Unordered = true }}
	tests.TestPubSub(t, features, f.constructor, f.groupConstructor)
}
