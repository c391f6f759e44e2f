package watermill

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	wm "github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"

	"github.com/equeue-go/equeue"
)

// ErrSubscriberClosed is returned by Subscribe and SubscribeInitialize after Close.
var ErrSubscriberClosed = errors.New("equeue watermill: subscriber closed")

// errNacked is what the handler returns to equeue for a Nack'd message.
var errNacked = errors.New("equeue watermill: message nacked")

// errUnfinished is what the handler returns to equeue for a message neither
// Ack'd nor Nack'd when the consumer stopped its handler (on Close or a
// handover).
var errUnfinished = errors.New("equeue watermill: message not acked before its handler was stopped")

// errNotHandedOut is what the handler returns to equeue for a message it
// had not handed out when the consumer stopped it: the consumer does not
// count that run as an attempt (equeue.ErrNotHandled).
var errNotHandedOut = fmt.Errorf("equeue watermill: message not handed out before its handler was stopped: %w", equeue.ErrNotHandled)

// errAckTimeout is what the handler returns to equeue for a message of an
// unordered clustering subscription neither Ack'd nor Nack'd within
// Consumer.ConsumeTimeout of being handed out.
var errAckTimeout = errors.New("equeue watermill: message neither acked nor nacked within the consume timeout")

// ConsumeFrom says where a consumer group that has no committed offset for a
// queue starts. Unlike equeue.ConsumeFrom, the zero value is FromEarliest.
type ConsumeFrom int

const (
	// FromEarliest starts at the oldest stored message, so a new group also
	// receives what was published before it subscribed. The default.
	FromEarliest ConsumeFrom = iota
	// FromLatest starts at the end of each queue.
	FromLatest
	// FromTimestamp starts at the first message stored at or after
	// SubscriberConfig.ConsumeFromTime.
	FromTimestamp
)

func (c ConsumeFrom) equeue() (equeue.ConsumeFrom, error) {
	switch c {
	case FromEarliest:
		return equeue.ConsumeFromEarliest, nil
	case FromLatest:
		return equeue.ConsumeFromLatest, nil
	case FromTimestamp:
		return equeue.ConsumeFromTimestamp, nil
	}
	return 0, fmt.Errorf("%w: unknown ConsumeFrom %d", equeue.ErrInvalidOptions, int(c))
}

// Defaults of SubscriberConfig.
const (
	DefaultNackResendDelay = 50 * time.Millisecond
	DefaultMaxAttempts     = 1 << 20
	// DefaultShutdownTimeout replaces a zero Consumer.ShutdownTimeout: how
	// long a stopping subscription waits for the Ack or Nack of a message
	// it handed out before that message counts as failed.
	DefaultShutdownTimeout = 500 * time.Millisecond
	// DefaultConsumeTimeout replaces a zero Consumer.ConsumeTimeout (it is
	// equeue's default): how long an unordered subscription of a
	// clustering group waits for the Ack or Nack of a message it handed
	// out before the message is delivered again.
	DefaultConsumeTimeout = 15 * time.Minute
)

// consumerMaxAttempts is the MaxAttempts of the equeue consumers: no limit,
// since the subscription itself decides when a message goes to the dead
// letters (see subscription.failed), so that a run a stop or a timeout
// interrupted, which the consumer counts too, never sends it there.
const consumerMaxAttempts = math.MaxInt

// SubscriberConfig configures a Subscriber. Broker is required; every zero
// field means the documented default.
type SubscriberConfig struct {
	// Broker serves the messages: an *equeue.Engine in-process or a remote
	// client. The Subscriber does not close it.
	Broker equeue.Broker

	// ConsumerGroup is the equeue consumer group (clustering model) every
	// Subscribe call joins: the group's members share the topic's queues and
	// each message is handled by one of them; the group's committed offsets
	// survive the Subscriber. Empty means every Subscribe call joins a new
	// group of its own, so each subscription receives every message (fan-out).
	//
	// An equeue group consumes one set of topics at a time: while a member
	// of group G consumes topic A, subscribing G to topic B fails with
	// equeue.ErrSubscriptionMismatch. To subscribe one Subscriber to several
	// topics (one Router, several handlers), set GroupName.
	ConsumerGroup string
	// GroupName, when set, derives the equeue group of each Subscribe call
	// from ConsumerGroup and the topic, for example TopicScopedGroup. It is
	// not used when ConsumerGroup is empty.
	GroupName func(consumerGroup, topic string) string
	// MemberID is the member ID of every Subscribe call in its group
	// (equeue.ConsumerOptions.ID): 1 to 255 bytes without a NUL byte. A
	// broadcasting group (Consumer.Model equeue.Broadcasting) keeps offsets
	// per member ID, so a broadcasting subscription goes on from the
	// offsets it committed, after a restart or a new Subscribe, only when
	// it joins again with the same MemberID: it is required for that, and
	// each instance of a service needs its own stable one (its host or pod
	// name, say). Empty means a new ID for every Subscribe call
	// (host-pid-random): a broadcasting subscription then starts as a new
	// member, where ConsumeFrom says, so it receives again what it had
	// handled (FromEarliest) or misses what was published while it was away
	// (FromLatest), and the offsets of the IDs it used stay in the group
	// until Options.GroupIdleTTL deletes them. It takes a ConsumerGroup:
	// without one every Subscribe call is a new group anyway.
	//
	// One live subscription at a time holds a member ID in a group: while
	// it does, Subscribe to that group with the same MemberID fails with
	// equeue.ErrMemberIDInUse (it succeeds once that subscription stopped,
	// or after a crash once its session expired). So a Subscriber with a
	// MemberID subscribes once per group at a time; with GroupName each
	// topic has a group of its own. In a clustering group the offsets are
	// the group's and MemberID only names the member.
	MemberID string

	// ConsumeFrom says where a group with no committed offset for a queue
	// starts. Zero value: FromEarliest.
	ConsumeFrom ConsumeFrom
	// ConsumeFromTime is the start time for FromTimestamp.
	ConsumeFromTime time.Time
	// Filter is an equeue tag expression ("*", "A || B"); empty means every message.
	Filter string

	// Queues is the queue count of topics the Subscriber creates (when the
	// Broker implements TopicCreator). Zero means 4.
	Queues int

	// NackResendDelay is the pause before a Nack'd message is delivered
	// again: in place for an orderly subscription; for an unordered one,
	// through the group's retry topic in a clustering group, and retried
	// locally by the subscription's consumer in a broadcasting group
	// (Consumer.Model equeue.Broadcasting), which has no retry topic. Zero
	// means 50 ms.
	NackResendDelay time.Duration
	// MaxAttempts is how many deliveries a message gets before equeue moves
	// it to the group's dead-letter topic (equeue.DLQTopic(group)): a message
	// Nack'd (or that the Unmarshaler refuses) on its MaxAttempts-th delivery
	// goes there. A delivery that a stop interrupted counts as one, but never
	// sends the message there: it goes back to the group. A message that
	// was waiting to be handed out at the stop was not delivered and does
	// not count. Zero means 1<<20:
	// in practice a Nack'd message is always delivered again.
	MaxAttempts int
	// Unordered handles several messages of one queue at a time (up to
	// Concurrency per subscription). The default, false, is equeue's orderly
	// mode: one message at a time per queue, in queue order, the next one
	// delivered only after the previous was Ack'd; a Nack'd message is
	// delivered again before any later one of its queue.
	Unordered bool
	// Concurrency is the number of messages a subscription handles at once
	// when Unordered. Zero means 16. Orderly subscriptions handle one message
	// per owned queue at a time.
	Concurrency int

	// Consumer tunes each equeue.Consumer a Subscribe call starts:
	// PullBatch, PullWait, CommitInterval, HeartbeatInterval, HandoffTimeout,
	// ShutdownTimeout (how long a stopping subscription waits for the Ack or
	// Nack of each message it handed out, see Subscribe; zero means
	// DefaultShutdownTimeout here, not equeue's 30 s), ConsumeTimeout
	// (unordered in a clustering group: a message not Ack'd or Nack'd
	// within it of being handed out fails as one counted attempt, never
	// its last, and is delivered again after NackResendDelay, so it may be
	// delivered twice; its context ends, a later Ack or Nack of it is
	// ignored, and the subscription hands out the next message in its
	// place; zero means DefaultConsumeTimeout),
	// flow-control limits, Strategy,
	// Model, Hooks, Logger. Its Group, ID (see MemberID),
	// Subscriptions, Handler, Orderly, Concurrency, LocalRetryDelay (and its
	// former name RetryDelay),
	// From and FromTime are set from the fields above, and MaxAttempts to no
	// limit (the Subscriber applies MaxAttempts itself). A nil Logger means
	// equeue logs go to Logger.
	Consumer equeue.ConsumerOptions

	// Unmarshaler turns equeue messages into Watermill messages. Nil means
	// DefaultMarshaler{}. The equeue_* metadata keys are set afterwards.
	Unmarshaler Unmarshaler
	// Logger receives the Subscriber's logs. Nil means watermill.NopLogger.
	Logger wm.LoggerAdapter
}

func (c *SubscriberConfig) setDefaults() {
	if c.Queues == 0 {
		c.Queues = equeue.DefaultQueues
	}
	if c.NackResendDelay == 0 {
		c.NackResendDelay = DefaultNackResendDelay
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.Consumer.ShutdownTimeout == 0 {
		c.Consumer.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Consumer.ConsumeTimeout == 0 {
		c.Consumer.ConsumeTimeout = DefaultConsumeTimeout
	}
	if c.Unmarshaler == nil {
		c.Unmarshaler = DefaultMarshaler{}
	}
	if c.Logger == nil {
		c.Logger = wm.NopLogger{}
	}
}

func (c *SubscriberConfig) validate() error {
	if c.Broker == nil {
		return fmt.Errorf("%w: SubscriberConfig.Broker is nil", equeue.ErrInvalidOptions)
	}
	if c.ConsumerGroup != "" && c.GroupName == nil {
		if err := equeue.ValidateName(c.ConsumerGroup); err != nil {
			return err
		}
	}
	if _, err := c.ConsumeFrom.equeue(); err != nil {
		return err
	}
	if len(c.MemberID) > 255 || strings.IndexByte(c.MemberID, 0) >= 0 {
		return fmt.Errorf("%w: SubscriberConfig.MemberID must be at most 255 bytes without a NUL byte", equeue.ErrInvalidOptions)
	}
	if c.Queues < 0 || c.Queues > equeue.MaxQueuesPerTopic {
		return fmt.Errorf("%w: SubscriberConfig.Queues %d not in 0..%d", equeue.ErrInvalidOptions, c.Queues, equeue.MaxQueuesPerTopic)
	}
	if c.NackResendDelay < 0 || c.MaxAttempts < 0 || c.Concurrency < 0 {
		return fmt.Errorf("%w: negative NackResendDelay, MaxAttempts or Concurrency", equeue.ErrInvalidOptions)
	}
	if err := equeue.ValidateFilter(c.Filter); err != nil {
		return err
	}
	return nil
}

// Subscriber is a Watermill message.Subscriber reading equeue topics. Each
// Subscribe call starts one equeue.Consumer. It is safe for concurrent use.
type Subscriber struct {
	cfg    SubscriberConfig
	from   equeue.ConsumeFrom
	topics *topicMaker
	log    wm.LoggerAdapter
	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup // one per live subscription
	errs   []error        // consumer Close errors met by Close
	// closeDone is closed once the first Close has closed every channel;
	// a later or concurrent Close waits for it.
	closeDone chan struct{}
}

var (
	_ message.Subscriber           = (*Subscriber)(nil)
	_ message.SubscribeInitializer = (*Subscriber)(nil)
)

// NewSubscriber returns a Subscriber on cfg.Broker.
func NewSubscriber(cfg SubscriberConfig) (*Subscriber, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	from, _ := cfg.ConsumeFrom.equeue()
	s := &Subscriber{
		cfg: cfg, from: from, topics: newTopicMaker(cfg.Broker, cfg.Queues), log: cfg.Logger,
		closeDone: make(chan struct{}),
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if cfg.Consumer.Logger == nil {
		s.cfg.Consumer.Logger = newSlogLogger(cfg.Logger)
	}
	return s, nil
}

// SubscribeInitialize creates topic (with Queues queues) when the Broker
// can create topics and the topic does not exist yet. It returns the
// Broker's refusal to create it even when the topic exists (a remote
// client whose token lacks the admin right); Subscribe does not need it.
func (s *Subscriber) SubscribeInitialize(topic string) error {
	if s.isClosed() {
		return ErrSubscriberClosed
	}
	return s.topics.ensure(s.ctx, topic)
}

func (s *Subscriber) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// memberID names one Subscribe call's member: SubscriberConfig.MemberID,
// else host-pid-random, unique even for two subscriptions of one process to
// one group.
func (s *Subscriber) memberID() string {
	if s.cfg.MemberID != "" {
		return s.cfg.MemberID
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), randomHex(6))
}

func (s *Subscriber) groupFor(topic string) (string, error) {
	if s.cfg.ConsumerGroup == "" {
		return "watermill-" + randomHex(8), nil
	}
	g := s.cfg.ConsumerGroup
	if s.cfg.GroupName != nil {
		g = s.cfg.GroupName(g, topic)
	}
	return g, equeue.ValidateName(g)
}

// Subscribe joins the consumer group (see SubscriberConfig.ConsumerGroup)
// on topic, creating the topic if needed, and returns the channel its
// messages arrive on. Each message must be Ack'd or Nack'd: Ack marks it
// consumed (committed with the consumer's next offset commit), Nack has it
// delivered again after NackResendDelay. In orderly mode the next message
// of a queue is not delivered before the current one is Ack'd.
//
// Subscribe returns once the consumer's queues are being consumed; a
// failure to start them (their offsets cannot be fetched or stored) is
// tried again meanwhile. When ctx ends or the Subscriber is closed first,
// it returns a channel that is closed, or ErrSubscriberClosed.
//
// The channel is closed when ctx is done or the Subscriber is closed, after
// the equeue consumer has committed what was Ack'd and left the group. The
// stop hands out no further message and ends the context of those handed
// out; an Ack or Nack of one of them still counts for up to
// Consumer.ShutdownTimeout (DefaultShutdownTimeout), after which it counts
// as one failed attempt. Messages not Ack'd by then are delivered again to
// the group later. A message that was waiting to be handed out does not
// count as an attempt.
func (s *Subscriber) Subscribe(ctx context.Context, topic string) (<-chan *message.Message, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrSubscriberClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	started := false
	defer func() {
		if !started {
			s.wg.Done()
		}
	}()

	createErr := s.topics.ensure(ctx, topic)
	group, err := s.groupFor(topic)
	if err != nil {
		return nil, err
	}
	o := s.cfg.Consumer
	o.Group = group
	o.ID = s.memberID()
	sub := &subscription{
		s:     s,
		out:   make(chan *message.Message),
		topic: topic,
		group: group,
		log:   s.log.With(wm.LogFields{"topic": topic, "consumer_group": group, "member": o.ID}),
	}
	o.Subscriptions = []equeue.Subscription{{Topic: topic, Filter: s.cfg.Filter}}
	o.Handler = sub.handle
	o.Orderly = !s.cfg.Unordered
	if !o.Orderly && o.Model == equeue.Clustering {
		sub.ackTimeout = o.ConsumeTimeout
	}
	o.Concurrency = s.cfg.Concurrency
	// Both names of the local retry pause, so a value left in the former
	// name cannot disagree with the new one.
	//lint:ignore SA1019 the former name is set only so that it agrees
	o.LocalRetryDelay, o.RetryDelay = s.cfg.NackResendDelay, s.cfg.NackResendDelay
	o.MaxAttempts = consumerMaxAttempts
	o.From = s.from
	o.FromTime = s.cfg.ConsumeFromTime
	c, err := equeue.NewConsumer(s.cfg.Broker, o)
	if err != nil {
		return nil, err
	}
	// The subscription stops when ctx ends or the Subscriber closes.
	var cancelStop context.CancelFunc
	sub.stop, cancelStop = context.WithCancel(ctx)
	unhook := context.AfterFunc(s.ctx, cancelStop)
	sub.endStop = func() { unhook(); cancelStop() }
	// Start waits for the consumer's queues to start, retrying while
	// their offsets cannot be fetched: a Close ends that wait too, or it
	// would wait for the Subscribe.
	if err := c.Start(sub.stop); err != nil {
		_ = c.Close()
		sub.endStop()
		if s.isClosed() {
			return nil, ErrSubscriberClosed
		}
		return nil, fmt.Errorf("equeue watermill: subscribe to %q as group %q: %w", topic, group, notCreated(err, createErr))
	}
	if createErr != nil {
		s.topics.exists(topic)
	}
	sub.consumer = c
	started = true
	go sub.run()
	sub.log.Debug("subscribed", nil)
	return sub.out, nil
}

// Close closes every subscription: each equeue consumer stops, commits
// what was Ack'd and leaves its group, then its channel is closed. Close
// returns once every channel is closed. It does not close the Broker.
// Idempotent: a later Close, or one concurrent with the first, also
// returns only once every channel is closed, and returns nil.
func (s *Subscriber) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.closeDone
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
	close(s.closeDone)
	s.mu.Lock()
	defer s.mu.Unlock()
	return errors.Join(s.errs...)
}

// subscription is one Subscribe call: an equeue consumer feeding out.
type subscription struct {
	s       *Subscriber
	stop    context.Context // ends when the Subscribe context does or the Subscriber closes
	endStop func()          // releases stop
	out     chan *message.Message
	// outMu is held for reading by a hand-out from its check of outClosed
	// to the end of its send, and for writing by the close of out: a
	// handler Consumer.Close gave up on cannot send on the closed channel.
	outMu     sync.RWMutex
	outClosed bool
	topic     string
	group     string
	consumer  *equeue.Consumer
	log       wm.LoggerAdapter
	// ackTimeout, when positive, bounds the wait for the Ack or Nack of a
	// message handed out: Consumer.ConsumeTimeout in an unordered
	// clustering subscription, whose consumer sends back a message
	// handled for longer (see timedOut).
	ackTimeout time.Duration
}

// run waits for the end of the subscription, stops the consumer and closes
// the channel. Consumer.Close may return with a handler still running (one
// it gave up on after ShutdownTimeout twice: an Unmarshaler or a wait that
// ignores its context); out is closed all the same. Such a handler hands
// nothing out once the subscription has stopped: handOut checks sub.stop,
// which ends before Close is called, before it sends on out, and sends
// only under outMu's read lock while out is open (see closeOut).
func (sub *subscription) run() {
	defer sub.s.wg.Done()
	defer sub.endStop()
	<-sub.stop.Done()
	byClose := sub.s.isClosed()
	err := withoutAbandoned(sub.consumer.Close())
	sub.closeOut()
	if err != nil {
		sub.log.Error("closing equeue consumer", err, nil)
		if byClose {
			sub.s.mu.Lock()
			sub.s.errs = append(sub.s.errs, fmt.Errorf("equeue watermill: close subscription to %q: %w", sub.topic, err))
			sub.s.mu.Unlock()
		}
	}
	sub.log.Debug("subscription closed", nil)
}

// handle is the equeue Handler: it hands the message to the Watermill side
// and waits for its Ack (nil: done) or Nack (an error: delivered again).
//
// ctx is cancelled when the consumer stops the handler: on Close after
// ShutdownTimeout, on a handover after HandoffTimeout. Only then does a
// message not Ack'd fail, not when the subscription stops: until the
// consumer has stopped starting handlers, a failed message could come
// straight back to it (an unordered one through the retry topic, or
// retried locally in a broadcasting group; an orderly one in place), to be
// failed again, each time a counted attempt, up to the dead letters,
// though it was handed out once.
func (sub *subscription) handle(ctx context.Context, em *equeue.Message) error {
	msg, err := unmarshal(sub.s.cfg.Unmarshaler, em)
	if err == nil && msg == nil {
		err = fmt.Errorf("the Unmarshaler returned no message: %w", equeue.ErrInvalidArgument)
	}
	if err != nil {
		sub.log.Error("cannot unmarshal message; it will be delivered again", err, wm.LogFields{
			"queue": em.Queue, "offset": em.Offset,
		})
		return sub.failed(em, err)
	}
	setReceivedMetadata(msg, em)
	// The message's context ends when the handler returns (after Ack or
	// Nack) or when the subscription stops.
	msgCtx, cancel := context.WithCancel(sub.stop)
	defer cancel()
	msg.SetContext(msgCtx)
	fields := wm.LogFields{"message_uuid": msg.UUID, "queue": em.Queue, "offset": em.Offset}

	if !sub.handOut(ctx, msg) {
		// Not handed out: it goes back once the consumer stops this
		// handler (returned earlier, the consumer would count it and
		// retry it).
		<-ctx.Done()
		return sub.notHandedOut()
	}
	sub.log.Trace("message sent to subscriber channel", fields)
	var timeout <-chan time.Time
	if sub.ackTimeout > 0 {
		t := time.NewTimer(sub.ackTimeout)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-msg.Acked():
		sub.log.Trace("message acked", fields)
		return nil
	case <-msg.Nacked():
		sub.log.Trace("message nacked", fields)
		return sub.failed(em, errNacked)
	case <-timeout:
		return sub.timedOut(em, msg, fields)
	case <-ctx.Done():
	}
	return sub.unfinished(msg)
}

// timedOut is the handler's result for a message of an unordered
// clustering subscription neither Ack'd nor Nack'd within ackTimeout of
// being handed out. Its consumer sends back such a message once its
// handler has run for ConsumeTimeout but lets the handler run on: waiting
// further would hold one of the subscription's Concurrency places until it
// stops, and once Concurrency messages were lost so, the subscription
// would hand out nothing more, not even those messages again. So the
// message fails here, as a counted attempt but never its last (the
// consumer has no attempt limit and this is not a Nack), and is delivered
// again after NackResendDelay; the deferred cancel in handle ends its
// context. Sent back already by the consumer, it is not sent back again.
// An Ack or Nack that raced with the timeout counts.
func (sub *subscription) timedOut(em *equeue.Message, msg *message.Message, fields wm.LogFields) error {
	select {
	case <-msg.Acked():
		return nil
	case <-msg.Nacked():
		return sub.failed(em, errNacked)
	default:
	}
	sub.log.Info("message neither acked nor nacked within the consume timeout; it will be delivered again", fields)
	return equeue.RetryAfter(sub.s.cfg.NackResendDelay, errAckTimeout)
}

// unmarshal runs u on em, a panic in it taken for an error: as an error,
// it counts toward MaxAttempts and the message is dead-lettered, where a
// panic reaching the consumer would have it delivered again without end
// (the subscription's consumers have no attempt limit of their own).
func unmarshal(u Unmarshaler, em *equeue.Message) (msg *message.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			msg, err = nil, fmt.Errorf("the Unmarshaler panicked: %v: %w", p, equeue.ErrInvalidArgument)
		}
	}()
	return u.Unmarshal(em)
}

// handOut sends msg on the subscription's channel; false when the
// subscription stopped, or the consumer stopped the handler, first.
func (sub *subscription) handOut(ctx context.Context, msg *message.Message) bool {
	if sub.stop.Err() != nil {
		return false // a send racing with the stop could still win
	}
	stallHandOut(msg)
	// Under the read lock the channel stays open until the select ends:
	// its close waits for the send, which ends once stop has.
	sub.outMu.RLock()
	defer sub.outMu.RUnlock()
	if sub.outClosed {
		return false
	}
	select {
	case sub.out <- msg:
		return true
	case <-ctx.Done():
	case <-sub.stop.Done():
	}
	return false
}

// closeOut closes out once no hand-out is sending on it; a later
// hand-out finds it closed (outClosed) and sends nothing. It is called
// after stop ended, so a send it waits for ends at once.
func (sub *subscription) closeOut() {
	sub.outMu.Lock()
	defer sub.outMu.Unlock()
	sub.outClosed = true
	close(sub.out)
}

// failed is the handler's result for a message the application Nack'd or
// the Unmarshaler refused: it goes to the dead letters when this was its
// MaxAttempts-th delivery, else it is delivered again after
// NackResendDelay. Orderly consumers retry it in place after
// LocalRetryDelay; unordered clustering ones send it through the group's
// retry topic, where RetryAfter sets the delay instead of equeue's backoff;
// unordered broadcasting ones retry it locally after the RetryAfter delay.
func (sub *subscription) failed(em *equeue.Message, cause error) error {
	if em.Attempt+1 >= sub.s.cfg.MaxAttempts {
		return equeue.DeadLetter(cause)
	}
	return equeue.RetryAfter(sub.s.cfg.NackResendDelay, cause)
}

// unfinished is the handler's result for a message it handed out when the
// consumer stopped it: an Ack that arrived counts; otherwise the message
// fails at once, with no delay, so the group gets it again promptly:
// through its retry topic when unordered in a clustering group, else from
// its offset (retried locally, its attempt stored with the commit). It
// fails as a counted attempt, but not as its last one: the consumer has no attempt
// limit (consumerMaxAttempts), so it is not dead-lettered. On Close the
// consumer has stopped starting handlers by then, so it does not get the
// message back itself.
func (sub *subscription) unfinished(msg *message.Message) error {
	select {
	case <-msg.Acked():
		return nil
	default:
	}
	return equeue.RetryAfter(0, errUnfinished)
}

// notHandedOut is the handler's result for a message it had not handed out
// when the consumer stopped it. The application never saw it, so the
// consumer, orderly or unordered, does not count the run
// (equeue.ErrNotHandled): it leaves the message uncommitted for the
// group's next delivery, without sending it back.
func (sub *subscription) notHandedOut() error {
	return errNotHandedOut
}
