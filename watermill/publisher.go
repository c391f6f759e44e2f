package watermill

import (
	"errors"
	"fmt"
	"sync"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/equeue-go/equeue"
)

// ErrPublisherClosed is returned by Publish after Close.
var ErrPublisherClosed = errors.New("equeue watermill: publisher closed")

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
}

func (c *PublisherConfig) setDefaults() {
	if c.Queues == 0 {
		c.Queues = equeue.DefaultQueues
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
	return nil
}

// Publisher is a Watermill message.Publisher storing messages in equeue
// topics. It is safe for concurrent use.
type Publisher struct {
	cfg      PublisherConfig
	producer *equeue.Producer
	topics   *topicMaker
	log      wm.LoggerAdapter

	mu       sync.RWMutex
	closed   bool
	inflight sync.WaitGroup
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
	return &Publisher{
		cfg: cfg, producer: p, topics: newTopicMaker(cfg.Broker, cfg.Queues), log: cfg.Logger,
		closeDone: make(chan struct{}),
	}, nil
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
// Marshaler that sets Message.ID from the UUID makes it apply.
func (p *Publisher) Publish(topic string, msgs ...*message.Message) error {
	p.mu.RLock()
	if p.closed {
		p.mu.RUnlock()
		return ErrPublisherClosed
	}
	p.inflight.Add(1)
	p.mu.RUnlock()
	defer p.inflight.Done()

	if len(msgs) == 0 {
		return nil
	}
	for i, msg := range msgs {
		if msg == nil {
			return fmt.Errorf("equeue watermill: publish to %q: message %d is nil: %w", topic, i, equeue.ErrInvalidArgument)
		}
	}
	createErr := p.topics.ensure(msgs[0].Context(), topic)
	recreated := false
	for _, msg := range msgs {
		em, err := p.cfg.Marshaler.Marshal(topic, msg)
		if err == nil && em == nil {
			err = fmt.Errorf("the Marshaler returned no message: %w", equeue.ErrInvalidArgument)
		}
		if err != nil {
			return fmt.Errorf("equeue watermill: marshal message %s: %w", msg.UUID, err)
		}
		em.Topic = topic
		res, err := p.producer.Send(msg.Context(), em)
		if errors.Is(err, equeue.ErrTopicNotFound) && !recreated {
			// Deleted since this Publisher made or saw it (nothing was
			// stored): make it again, once per call, as on first use.
			recreated = true
			p.topics.forget(topic)
			createErr = p.topics.ensure(msg.Context(), topic)
			res, err = p.producer.Send(msg.Context(), em)
		}
		if err != nil {
			return fmt.Errorf("equeue watermill: publish message %s to %q: %w", msg.UUID, topic, notCreated(err, createErr))
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

// Close waits for Publish calls in progress and stops the Publisher. It
// does not close the Broker. Idempotent: a later Close, or one concurrent
// with the first, also waits for those Publish calls (and for the
// producer to close), and returns nil.
func (p *Publisher) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.closeDone
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	defer close(p.closeDone)
	p.inflight.Wait()
	return p.producer.Close()
}
