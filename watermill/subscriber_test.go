package watermill_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

func newPublisher(t *testing.T, cfg eqwm.PublisherConfig) *eqwm.Publisher {
	t.Helper()
	p, err := eqwm.NewPublisher(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, p.Close()) })
	return p
}

func newSubscriber(t *testing.T, cfg eqwm.SubscriberConfig) *eqwm.Subscriber {
	t.Helper()
	if cfg.Consumer.HeartbeatInterval == 0 {
		cfg.Consumer = fastConsumer
	}
	s, err := eqwm.NewSubscriber(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// receive waits for one message.
func receive(t *testing.T, ch <-chan *message.Message) *message.Message {
	t.Helper()
	select {
	case m, ok := <-ch:
		require.True(t, ok, "channel closed")
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10s")
		return nil
	}
}

// assertNothing checks that no message arrives for d.
func assertNothing(t *testing.T, ch <-chan *message.Message, d time.Duration) {
	t.Helper()
	select {
	case m, ok := <-ch:
		if ok {
			t.Fatalf("unexpected message %s (%v)", m.UUID, m.Metadata)
		}
	case <-time.After(d):
	}
}

func assertClosed(t *testing.T, ch <-chan *message.Message) {
	t.Helper()
	select {
	case _, ok := <-ch:
		require.False(t, ok, "channel should be closed, got a message")
	case <-time.After(10 * time.Second):
		t.Fatal("channel not closed within 10s")
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestConfigValidation(t *testing.T) {
	_, err := eqwm.NewPublisher(eqwm.PublisherConfig{})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
	_, err = eqwm.NewSubscriber(eqwm.SubscriberConfig{})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)

	e := openEngine(t)
	_, err = eqwm.NewPublisher(eqwm.PublisherConfig{Broker: e, Queues: equeue.MaxQueuesPerTopic + 1})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
	_, err = eqwm.NewSubscriber(eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "bad group"})
	assert.ErrorIs(t, err, equeue.ErrInvalidName)
	_, err = eqwm.NewSubscriber(eqwm.SubscriberConfig{Broker: e, Filter: "||"})
	assert.ErrorIs(t, err, equeue.ErrInvalidFilter)
	_, err = eqwm.NewSubscriber(eqwm.SubscriberConfig{Broker: e, ConsumeFrom: 9})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
	_, err = eqwm.NewSubscriber(eqwm.SubscriberConfig{Broker: e, NackResendDelay: -1})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
	for _, id := range []string{"a\x00b", strings.Repeat("m", 256)} {
		_, err = eqwm.NewSubscriber(eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", MemberID: id})
		assert.ErrorIs(t, err, equeue.ErrInvalidOptions, "MemberID of %d bytes", len(id))
	}
}

// TestRoundTrip checks what a received message carries.
func TestRoundTrip(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 2})
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e})

	msg := message.NewMessage(wm.NewUUID(), []byte("payload"))
	msg.Metadata.Set("k", "v")
	msg.Metadata.Set(eqwm.MetadataOffset, "stale") // not sent on
	// The same Watermill message published twice is stored twice, under two equeue IDs.
	require.NoError(t, pub.Publish("rt", msg, msg))

	ti, err := e.Topic(ctxT(t), "rt")
	require.NoError(t, err)
	assert.Len(t, ti.Queues, 2, "topic created with PublisherConfig.Queues")

	ch, err := sub.Subscribe(ctxT(t), "rt")
	require.NoError(t, err)
	ids := map[string]bool{}
	for range 2 {
		got := receive(t, ch)
		assert.Equal(t, msg.UUID, got.UUID)
		assert.Equal(t, "payload", string(got.Payload))
		assert.Equal(t, "v", got.Metadata.Get("k"))
		assert.Equal(t, "rt", got.Metadata.Get(eqwm.MetadataTopic))
		assert.Equal(t, "0", got.Metadata.Get(eqwm.MetadataAttempt))
		q, err := strconv.Atoi(got.Metadata.Get(eqwm.MetadataQueue))
		require.NoError(t, err)
		assert.True(t, q == 0 || q == 1)
		off, err := strconv.ParseInt(got.Metadata.Get(eqwm.MetadataOffset), 10, 64)
		require.NoError(t, err, "offset must be the stored one")
		assert.GreaterOrEqual(t, off, int64(0))
		_, leaked := got.Metadata[eqwm.UUIDProperty]
		assert.False(t, leaked, "the UUID property is not metadata")
		id := got.Metadata.Get(eqwm.MetadataMessageID)
		assert.NotEmpty(t, id)
		assert.NotEqual(t, msg.UUID, id)
		ids[id] = true
		require.True(t, got.Ack())
	}
	assert.Len(t, ids, 2, "each stored copy has its own equeue ID")
}

// TestForeignMessage reads a message sent by a plain equeue producer.
func TestForeignMessage(t *testing.T) {
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "plain", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	res, err := p.Send(ctxT(t), &equeue.Message{Topic: "plain", Body: []byte("hi"), Properties: map[string]string{"a": "b"}})
	require.NoError(t, err)

	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e})
	ch, err := sub.Subscribe(ctxT(t), "plain")
	require.NoError(t, err)
	got := receive(t, ch)
	assert.Equal(t, res.ID, got.UUID, "without the UUID property the equeue ID is the UUID")
	assert.Equal(t, "b", got.Metadata.Get("a"))
	got.Ack()
}

// TestMarshalerKeysAndTags routes by a metadata key and filters by tag.
func TestMarshalerKeysAndTags(t *testing.T) {
	e := openEngine(t)
	m := eqwm.DefaultMarshaler{KeyMetadata: "order", TagMetadata: "kind"}
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 8, Marshaler: m})
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, Filter: "created"})

	var want []string
	for i := range 20 {
		msg := message.NewMessage(wm.NewUUID(), fmt.Appendf(nil, "%d", i))
		msg.Metadata.Set("order", "o-42")
		kind := "created"
		if i%2 == 1 {
			kind = "deleted"
		} else {
			want = append(want, msg.UUID)
		}
		msg.Metadata.Set("kind", kind)
		require.NoError(t, pub.Publish("orders", msg))
	}
	ch, err := sub.Subscribe(ctxT(t), "orders")
	require.NoError(t, err)
	var got []string
	queues := map[string]bool{}
	for range want {
		msg := receive(t, ch)
		got = append(got, msg.UUID)
		queues[msg.Metadata.Get(eqwm.MetadataQueue)] = true
		assert.Equal(t, "created", msg.Metadata.Get("kind"))
		msg.Ack()
	}
	assert.Equal(t, want, got, "same key: one queue, publish order")
	assert.Len(t, queues, 1)
	assertNothing(t, ch, 100*time.Millisecond)
}

// TestClusteringDeliversOnce runs two subscribers in one consumer group:
// the topic's queues are split between them and each message is delivered
// to exactly one.
func TestClusteringDeliversOnce(t *testing.T) {
	e := openEngine(t)
	ctx := ctxT(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 4})
	subA := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "workers"})
	subB := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "workers"})
	chA, err := subA.Subscribe(ctx, "jobs")
	require.NoError(t, err)
	chB, err := subB.Subscribe(ctx, "jobs")
	require.NoError(t, err)

	// Let the group settle: two members, two queues each.
	require.Eventually(t, func() bool {
		gi, err := e.Group(ctx, "workers")
		if err != nil || len(gi.Members) != 2 {
			return false
		}
		for _, m := range gi.Members {
			if len(m.Queues) != 2 {
				return false
			}
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)

	const n = 200
	sent := map[string]bool{}
	for i := range n {
		msg := message.NewMessage(wm.NewUUID(), fmt.Appendf(nil, "%d", i))
		sent[msg.UUID] = true
		require.NoError(t, pub.Publish("jobs", msg))
	}

	var (
		mu    sync.Mutex
		count = map[string]int{}
		by    = map[string]int{}
		total int
		done  = make(chan struct{})
	)
	read := func(name string, ch <-chan *message.Message) {
		for msg := range ch {
			mu.Lock()
			count[msg.UUID]++
			by[name]++
			total++
			if total == n {
				close(done)
			}
			mu.Unlock()
			msg.Ack()
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); read("A", chA) }()
	go func() { defer wg.Done(); read("B", chB) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("only %d of %d delivered", total, n)
	}
	time.Sleep(300 * time.Millisecond) // any duplicate would show up now
	require.NoError(t, subA.Close())
	require.NoError(t, subB.Close())
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, n, total, "no message delivered twice")
	assert.Len(t, count, n)
	for id, c := range count {
		assert.True(t, sent[id])
		assert.Equal(t, 1, c, "message %s", id)
	}
	assert.Positive(t, by["A"])
	assert.Positive(t, by["B"])
	t.Logf("delivered: A=%d B=%d", by["A"], by["B"])
}

// TestGroupContinues checks at-least-once across Subscriber instances of a
// group: Ack'd messages are not delivered again, an un-Ack'd one is, at
// once, as one counted attempt: from its offset when orderly; through the
// retry topic when unordered (the final commit passes it, so nothing above it
// is delivered twice). The next message was never handed out: it comes back
// as it was.
func TestGroupContinues(t *testing.T) {
	for _, unordered := range []bool{false, true} {
		t.Run(fmt.Sprintf("unordered=%v", unordered), func(t *testing.T) {
			// Every wait that could hold the second subscriber up (the
			// first member's session, a long-poll, the retry topic's own
			// delays instead of NackResendDelay) is far longer than
			// receive waits: waiting one out fails the test.
			const long = 10 * time.Minute
			e, err := equeue.Open("", &equeue.Options{InMemory: true, SessionTimeout: long, MaxPullWait: long})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
			var uuids []string
			for i := range 3 {
				msg := message.NewMessage(wm.NewUUID(), fmt.Appendf(nil, "%d", i))
				uuids = append(uuids, msg.UUID)
				require.NoError(t, pub.Publish("work", msg))
			}

			// One worker keeps an unordered subscription in order here.
			opts := patientConsumer
			opts.PullWait, opts.RetryTopicDelays = long, []time.Duration{long}
			cfg := eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", Unordered: unordered, Concurrency: 1, Consumer: opts}
			first, err := eqwm.NewSubscriber(cfg)
			require.NoError(t, err)
			ch, err := first.Subscribe(ctxT(t), "work")
			require.NoError(t, err)
			m := receive(t, ch)
			assert.Equal(t, uuids[0], m.UUID)
			m.Ack()
			m = receive(t, ch)
			assert.Equal(t, uuids[1], m.UUID) // not Ack'd
			require.NoError(t, first.Close())
			assertClosed(t, ch)
			select {
			case <-m.Context().Done():
			default:
				t.Fatal("the context of an un-Ack'd message ends with the subscription")
			}

			second := newSubscriber(t, cfg)
			ch, err = second.Subscribe(ctxT(t), "work")
			require.NoError(t, err)
			got := map[string]string{} // UUID -> attempt
			for _, want := range uuids[1:] {
				m := receive(t, ch)
				if !unordered {
					assert.Equal(t, want, m.UUID)
				}
				got[m.UUID] = m.Metadata.Get(eqwm.MetadataAttempt)
				m.Ack()
			}
			// The un-Ack'd message failed once, at the stop: unordered, it
			// comes back through the retry topic; orderly, from its offset
			// with the attempt stored with it. The one worker was busy with
			// it until the consumer stopped starting handlers, so the next
			// message never ran.
			assert.Equal(t, map[string]string{uuids[1]: "1", uuids[2]: "0"}, got, "its failed run counted once")
			assertNothing(t, ch, 100*time.Millisecond)
		})
	}
}

func TestNackRedelivers(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, NackResendDelay: 100 * time.Millisecond})
	msg := message.NewMessage(wm.NewUUID(), []byte("x"))
	require.NoError(t, pub.Publish("nack", msg))
	ch, err := sub.Subscribe(ctxT(t), "nack")
	require.NoError(t, err)

	m := receive(t, ch)
	nackedAt := time.Now()
	require.True(t, m.Nack())
	select {
	case <-m.Context().Done():
	case <-time.After(5 * time.Second):
		t.Fatal("message context not cancelled after Nack")
	}
	m = receive(t, ch)
	assert.GreaterOrEqual(t, time.Since(nackedAt), 90*time.Millisecond, "redelivered after NackResendDelay")
	assert.Equal(t, msg.UUID, m.UUID)
	assert.Equal(t, "1", m.Metadata.Get(eqwm.MetadataAttempt))
	m.Ack()
	assertNothing(t, ch, 200*time.Millisecond)
}

// TestNackRedeliversUnordered: an unordered clustering consumer sends a
// Nack'd message through the group's retry topic; it comes back after
// NackResendDelay (not equeue's default backoff) with its original UUID,
// topic, queue and offset.
func TestNackRedeliversUnordered(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	// The retry topic's own delays are far longer than receive waits: a
	// redelivery after them instead of NackResendDelay fails the test.
	opts := fastConsumer
	opts.RetryTopicDelays = []time.Duration{10 * time.Minute}
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "un", Unordered: true, NackResendDelay: 100 * time.Millisecond, Consumer: opts})
	msg := message.NewMessage(wm.NewUUID(), []byte("x"))
	msg.Metadata.Set("k", "v")
	require.NoError(t, pub.Publish("nack-un", msg))
	ch, err := sub.Subscribe(ctxT(t), "nack-un")
	require.NoError(t, err)

	first := receive(t, ch)
	nackedAt := time.Now()
	require.True(t, first.Nack())
	m := receive(t, ch)
	assert.GreaterOrEqual(t, time.Since(nackedAt), 90*time.Millisecond)
	assert.Equal(t, msg.UUID, m.UUID)
	assert.Equal(t, "v", m.Metadata.Get("k"))
	assert.Equal(t, "1", m.Metadata.Get(eqwm.MetadataAttempt))
	for _, k := range []string{eqwm.MetadataTopic, eqwm.MetadataQueue, eqwm.MetadataOffset} {
		assert.Equal(t, first.Metadata.Get(k), m.Metadata.Get(k), k)
	}
	m.Ack()
	assertNothing(t, ch, 200*time.Millisecond)
}

// TestNackRedeliversUnorderedBroadcasting: an unordered subscription of a
// broadcasting group has its Nack'd message retried locally by its
// consumer, not through the group's retry topic, which a broadcasting
// group does not use: it comes back to the same subscription with its
// original UUID, topic, queue and offset, and its attempt counted.
func TestNackRedeliversUnorderedBroadcasting(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	opts := fastConsumer
	opts.Model = equeue.Broadcasting
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "bc", MemberID: "m", Unordered: true,
		NackResendDelay: time.Millisecond, Consumer: opts})
	msg := message.NewMessage(wm.NewUUID(), []byte("x"))
	require.NoError(t, pub.Publish("nack-bc", msg))
	ch, err := sub.Subscribe(ctxT(t), "nack-bc")
	require.NoError(t, err)

	first := receive(t, ch)
	require.True(t, first.Nack())
	m := receive(t, ch)
	assert.Equal(t, msg.UUID, m.UUID)
	assert.Equal(t, "1", m.Metadata.Get(eqwm.MetadataAttempt))
	for _, k := range []string{eqwm.MetadataTopic, eqwm.MetadataQueue, eqwm.MetadataOffset} {
		assert.Equal(t, first.Metadata.Get(k), m.Metadata.Get(k), k)
	}
	m.Ack()
	assertNothing(t, ch, 200*time.Millisecond)
	assert.Zero(t, stored(t, e, equeue.RetryTopic("bc")), "a broadcasting group's Nack went through the retry topic")
}

// TestDeadLetter: after MaxAttempts Nacks, equeue moves the message to the
// group's dead-letter topic, which can be subscribed to like any topic.
func TestDeadLetter(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "svc", MaxAttempts: 2, NackResendDelay: time.Millisecond})
	msg := message.NewMessage(wm.NewUUID(), []byte("poison"))
	require.NoError(t, pub.Publish("in", msg))
	ch, err := sub.Subscribe(ctxT(t), "in")
	require.NoError(t, err)
	receive(t, ch).Nack()
	receive(t, ch).Nack()
	assertNothing(t, ch, 100*time.Millisecond)

	dlq := newSubscriber(t, eqwm.SubscriberConfig{Broker: e})
	dch, err := dlq.Subscribe(ctxT(t), equeue.DLQTopic("svc"))
	require.NoError(t, err)
	m := receive(t, dch)
	assert.Equal(t, msg.UUID, m.UUID)
	assert.Equal(t, "poison", string(m.Payload))
	m.Ack()
}

func TestUnordered(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	for range 4 {
		require.NoError(t, pub.Publish("par", message.NewMessage(wm.NewUUID(), []byte("x"))))
	}
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, Unordered: true, Concurrency: 4})
	ch, err := sub.Subscribe(ctxT(t), "par")
	require.NoError(t, err)
	// Four messages of one queue are out at once, none Ack'd yet.
	var held []*message.Message
	for range 4 {
		held = append(held, receive(t, ch))
	}
	for _, m := range held {
		m.Ack()
	}

	orderly := newSubscriber(t, eqwm.SubscriberConfig{Broker: e})
	och, err := orderly.Subscribe(ctxT(t), "par")
	require.NoError(t, err)
	m := receive(t, och)
	assertNothing(t, och, 100*time.Millisecond) // the next waits for the Ack
	m.Ack()
	receive(t, och).Ack()
}

func TestSubscribeContextAndClose(t *testing.T) {
	e := openEngine(t)
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e})
	ctx, cancel := context.WithCancel(context.Background())
	ch1, err := sub.Subscribe(ctx, "a")
	require.NoError(t, err)
	ch2, err := sub.Subscribe(context.Background(), "b")
	require.NoError(t, err)
	cancel()
	assertClosed(t, ch1)

	require.NoError(t, sub.Close())
	assertClosed(t, ch2)
	require.NoError(t, sub.Close(), "idempotent")
	_, err = sub.Subscribe(context.Background(), "a")
	assert.ErrorIs(t, err, eqwm.ErrSubscriberClosed)
	assert.ErrorIs(t, sub.SubscribeInitialize("a"), eqwm.ErrSubscriberClosed)

	pub, err := eqwm.NewPublisher(eqwm.PublisherConfig{Broker: e})
	require.NoError(t, err)
	require.NoError(t, pub.Close())
	require.NoError(t, pub.Close(), "idempotent")
	assert.ErrorIs(t, pub.Publish("a", message.NewMessage(wm.NewUUID(), nil)), eqwm.ErrPublisherClosed)
}

// TestGroupAcrossTopics: an equeue group consumes one topic set at a time,
// so one named group on two topics needs GroupName.
func TestGroupAcrossTopics(t *testing.T) {
	e := openEngine(t)
	plain := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "svc"})
	_, err := plain.Subscribe(ctxT(t), "t1")
	require.NoError(t, err)
	_, err = plain.Subscribe(ctxT(t), "t2")
	assert.ErrorIs(t, err, equeue.ErrSubscriptionMismatch)

	scoped := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "svc", GroupName: eqwm.TopicScopedGroup})
	_, err = scoped.Subscribe(ctxT(t), "t1")
	require.NoError(t, err)
	_, err = scoped.Subscribe(ctxT(t), "t2")
	require.NoError(t, err)
	for _, g := range []string{"svc.t1", "svc.t2"} {
		gi, err := e.Group(ctxT(t), g)
		require.NoError(t, err)
		assert.Len(t, gi.Members, 1, g)
	}
}

// infoLog records the Info logs of a Watermill logger.
type infoLog struct {
	wm.NopLogger
	mu     sync.Mutex
	fields wm.LogFields
	lines  *[]wm.LogFields
}

func (l *infoLog) Info(msg string, fields wm.LogFields) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.fields.Add(fields)
	f["msg"] = msg
	*l.lines = append(*l.lines, f)
}

func (l *infoLog) With(fields wm.LogFields) wm.LoggerAdapter {
	return &infoLog{fields: l.fields.Add(fields), lines: l.lines}
}

func (l *infoLog) find(msg string) wm.LogFields {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range *l.lines {
		if f["msg"] == msg {
			return f
		}
	}
	return nil
}

// TestLoggerBridge checks that equeue consumer logs reach the Watermill logger.
func TestLoggerBridge(t *testing.T) {
	e := openEngine(t)
	logger := &infoLog{lines: new([]wm.LogFields)}
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "logged", MaxAttempts: 1, Logger: logger})
	require.NoError(t, pub.Publish("l", message.NewMessage(wm.NewUUID(), nil)))
	ch, err := sub.Subscribe(ctxT(t), "l")
	require.NoError(t, err)
	receive(t, ch).Nack() // dead-lettered at once: equeue logs a warning
	var f wm.LogFields
	require.Eventually(t, func() bool { f = logger.find("message dead-lettered"); return f != nil }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, "logged", f["group"])
	assert.Equal(t, "l", f["topic"])
	assert.Contains(t, f["err"], "nacked")
}

// failingUnmarshaler refuses every message.
type failingUnmarshaler struct{}

func (failingUnmarshaler) Unmarshal(*equeue.Message) (*message.Message, error) {
	return nil, fmt.Errorf("cannot read")
}

// TestUnmarshalErrorDeadLetters: a message the Unmarshaler refuses counts
// as Nack'd, and goes to the dead letters after MaxAttempts.
func TestUnmarshalErrorDeadLetters(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e})
	require.NoError(t, pub.Publish("bad", message.NewMessage(wm.NewUUID(), []byte("x"))))
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "svc", MaxAttempts: 2,
		NackResendDelay: time.Millisecond, Unmarshaler: failingUnmarshaler{}})
	ch, err := sub.Subscribe(ctxT(t), "bad")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return stored(t, e, equeue.DLQTopic("svc")) == 1 }, 10*time.Second, 5*time.Millisecond)
	assertNothing(t, ch, 100*time.Millisecond)
}
