package watermill

import (
	"context"
	"errors"
	"fmt"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/equeue-go/equeue"
)

// ErrPublisherClosed is returned by Publish after Close, and by a Publish
// whose send Close ended (see PublisherConfig.CloseTimeout).
var ErrPublisherClosed = errors.New("equeue watermill: publisher closed")

// DefaultCloseTimeout replaces a zero PublisherConfig.CloseTimeout.
const DefaultCloseTimeout = 5 * time.Second

// PublisherConfig configures a Publisher. Broker is required; every zero
// field means the documented default.
type PublisherConfig struct {
	// Broker stores the messages: an *equeue.Engine in-process or a remote
	// client. The Publisher does not close it.
	Broker equeue.Broker
	// Queues is the queue count of topics the Publisher creates (when the
	// Broker implements TopicCreator). Zero means 4. A topic that exists
	// keeps its queue count.
	Queues int
	// Marshaler turns Watermill messages into equeue messages. Nil means
	// DefaultMarshaler{}.
	Marshaler Marshaler
	// Producer tunes the underlying equeue.Producer (queue selector, sync
	// policy, hooks). Nil means equeue's defaults: messages with a routing
	// key are hashed to a queue, the others are spread round robin.
	Producer *equeue.ProducerOptions
	// Logger receives the Publisher's logs. Nil means watermill.NopLogger.
	Logger wm.LoggerAdapter
	// CloseTimeout is how long Close waits for the Publish calls in
	// progress to return by themselves. Then it ends the contexts of their
	// sends (and topic creations) and waits for them to return: a send
	// that a broker no longer answers, under a message context that never
	// ends, cannot hold Close for ever. It does not wait for a call inside
	// Marshaler.Marshal, which has no context to end: a Marshal that never
	// returns cannot hold Close either. Zero means DefaultCloseTimeout.
	CloseTimeout time.Duration
}

func (c *PublisherConfig) setDefaults() {
	if c.Queues == 0 {
		c.Queues = equeue.DefaultQueues
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.Marshaler == nil {
		c.Marshaler = DefaultMarshaler{}
	}
	if c.Logger == nil {
		c.Logger = wm.NopLogger{}
	}
}

func (c *PublisherConfig) validate() error {
	if c.Broker == nil {
		return fmt.Errorf("%w: PublisherConfig.Broker is nil", equeue.ErrInvalidOptions)
	}
	if c.Queues < 0 || c.Queues > equeue.MaxQueuesPerTopic {
		return fmt.Errorf("%w: PublisherConfig.Queues %d not in 0..%d", equeue.ErrInvalidOptions, c.Queues, equeue.MaxQueuesPerTopic)
	}
	if c.CloseTimeout < 0 {
		return fmt.Errorf("%w: negative PublisherConfig.CloseTimeout", equeue.ErrInvalidOptions)
	}
	return nil
}

// Publisher is a Watermill message.Publisher storing messages in equeue
// topics. It is safe for concurrent use.
type Publisher struct {
	cfg      PublisherConfig
	producer *equeue.Producer
	topics   *topicMaker
	log      wm.LoggerAdapter

	// calls counts the Publish calls in progress for Close.
	calls *publishCalls
	// stopping ends once Close has waited CloseTimeout for the Publish
	// calls in progress: it ends the contexts of their sends.
	stopping context.Context
	stop     context.CancelFunc
	// closeDone is closed once the first Close has returned from waiting
	// and closing the producer; a later or concurrent Close waits for it.
	closeDone chan struct{}
}

var _ message.Publisher = (*Publisher)(nil)

// NewPublisher returns a Publisher on cfg.Broker.
func NewPublisher(cfg PublisherConfig) (*Publisher, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	p, err := equeue.NewProducer(cfg.Broker, cfg.Producer)
	if err != nil {
		return nil, err
	}
	pub := &Publisher{
		cfg: cfg, producer: p, topics: newTopicMaker(cfg.Broker, cfg.Queues), log: cfg.Logger,
		calls: newPublishCalls(), closeDone: make(chan struct{}),
	}
	pub.stopping, pub.stop = context.WithCancel(context.Background())
	return pub, nil
}

// sendContext returns the context of a send of a message whose context is
// ctx: it also ends when Close stops waiting (see CloseTimeout). release
// frees it.
func (p *Publisher) sendContext(ctx context.Context) (sendCtx context.Context, release func()) {
	sendCtx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(p.stopping, cancel)
	return sendCtx, func() { unhook(); cancel() }
}

// stopped returns err, the failure of a send, marked with
// ErrPublisherClosed when Close ended the send's context.
func (p *Publisher) stopped(err error) error {
	if p.stopping.Err() == nil || errors.Is(err, ErrPublisherClosed) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrPublisherClosed, err)
}

// Publish stores msgs in topic, one after the other, and returns once each
// is stored (durable under the broker's sync policy). A missing topic is
// created first when the Broker can; a refusal to create it (a remote
// client without the admin right) is returned only if the topic does not
// exist. Each message is sent
// with its own Context. Messages are routed to queues individually, so only
// messages that share a queue (same routing key, or a one-queue topic) keep
// their relative order. Publish stops at the first message that fails: the
// messages before it are stored, those after it are not sent, and the
// failing one, whose UUID the error names, is not stored either unless
// the error matches equeue.ErrIndeterminate (its outcome is unknown; it
// may be stored). A Publish retried after such an error can store a
// message twice: DefaultMarshaler leaves the equeue message ID to the
// broker (see UUIDProperty), so a topic's dedup window does not apply; a
// Marshaler that sets Message.ID from the UUID makes it apply. A Publish
// still in progress CloseTimeout after Close began has the context of its
// send ended, and fails with an error matching ErrPublisherClosed as well
// as the send's own error; one inside Marshaler.Marshal then fails with
// ErrPublisherClosed once Marshal returns, without sending the message.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	if !p.calls.begin() {
		return ErrPublisherClosed
	}
	defer p.calls.end()

	if len(msgs) == 0 {
		return nil
	}
	for i, msg := range msgs {
		if msg == nil {
			return fmt.Errorf("equeue watermill: publish to %q: message %d is nil: %w", topic, i, equeue.ErrInvalidArgument)
		}
	}
	ctx, release := p.sendContext(msgs[0].Context())
	createErr := p.topics.ensure(ctx, topic)
	release()
	recreated := false
	for _, msg := range msgs {
		em, err := p.marshal(topic, msg)
		if errors.Is(err, ErrPublisherClosed) {
			return fmt.Errorf("equeue watermill: publish message %s to %q: %w", msg.UUID, topic, err)
		}
		if err == nil && em == nil {
			err = fmt.Errorf("the Marshaler returned no message: %w", equeue.ErrInvalidArgument)
		}
		if err != nil {
			return fmt.Errorf("equeue watermill: marshal message %s: %w", msg.UUID, err)
		}
		em.Topic = topic
		ctx, release := p.sendContext(msg.Context())
		res, err := p.producer.Send(ctx, em)
		if errors.Is(err, equeue.ErrTopicNotFound) && !recreated {
			// Deleted since this Publisher made or saw it (nothing was
			// stored): make it again, once per call, as on first use.
			recreated = true
			p.topics.forget(topic)
			createErr = p.topics.ensure(ctx, topic)
			res, err = p.producer.Send(ctx, em)
		}
		release()
		if err != nil {
			return fmt.Errorf("equeue watermill: publish message %s to %q: %w", msg.UUID, topic, p.stopped(notCreated(err, createErr)))
		}
		if createErr != nil {
			p.topics.exists(topic)
			createErr = nil
		}
		p.log.Trace("message published", wm.LogFields{
			"message_uuid": msg.UUID, "topic": topic, "queue": res.Queue, "offset": res.Offset, "equeue_id": res.ID,
		})
	}
	return nil
}

// marshal runs the Marshaler on msg, unless Close cut the Publish calls
// off (see CloseTimeout): then, and when the cut came while it ran, it
// returns ErrPublisherClosed, and the message must not be sent.
func (p *Publisher) marshal(topic string, msg *message.Message) (*equeue.Message, error) {
	if !p.calls.enterMarshal() {
		return nil, ErrPublisherClosed
	}
	em, err := p.cfg.Marshaler.Marshal(topic, msg)
	if !p.calls.leaveMarshal() {
		return nil, ErrPublisherClosed
	}
	return em, err
}

// Close waits for Publish calls in progress and stops the Publisher. It
// does not close the Broker. Those still in progress after CloseTimeout
// are cut off: the contexts of their sends end, and Close waits for those
// sends to return; a call inside Marshaler.Marshal is not waited for (a
// Marshal has no context to end). Each call cut off fails with
// ErrPublisherClosed, one inside Marshal once Marshal returns, without
// sending that message or the ones after it. Idempotent: a later Close,
// or one concurrent with the first, also waits for those Publish calls
// (and for the producer to close), and returns nil.
func (p *Publisher) Close() error {
	if !p.calls.close() {
		<-p.closeDone
		return nil
	}
	defer close(p.closeDone)
	t := time.NewTimer(p.cfg.CloseTimeout)
	defer t.Stop()
	if !p.calls.wait(t.C) {
		p.log.Info("publish calls still in progress at the close timeout; ending their sends", wm.LogFields{"close_timeout": p.cfg.CloseTimeout})
		p.calls.cutOff()
		p.stop()
		p.calls.wait(nil)
	}
	p.stop()
	return p.producer.Close()
}
