package otel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	gotel "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/equeue-go/equeue"
)

// DefaultCollectTimeout bounds how long one collection waits for the
// engine's group listing.
const DefaultCollectTimeout = 5 * time.Second

// Bucket boundaries in seconds, the same as package metrics uses.
var (
	pullBuckets    = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20}
	handlerBuckets = []float64{.0001, .0005, .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
)

// Pull results, the values of the "result" attribute of equeue.pull.duration.
const (
	ResultMessages = "messages"
	ResultEmpty    = "empty"
)

// MetricsOptions configure Metrics. A nil *MetricsOptions, and every zero
// field, means the documented default.
type MetricsOptions struct {
	// MeterProvider makes the instruments. Nil means the global provider.
	MeterProvider metric.MeterProvider
	// Timeout bounds how long a collection waits for the engine's group
	// listing. Zero means DefaultCollectTimeout.
	Timeout time.Duration
}

// Metrics records an engine's metrics through OpenTelemetry. Instrument
// names follow OpenTelemetry's style and become, through an OpenTelemetry
// Prometheus exporter, the names package metrics uses (equeue.pull.duration
// in seconds is equeue_pull_duration_seconds), so one dashboard serves both:
//
//	equeue.appended.messages{topic,queue}     counter    messages appended since the engine opened
//	equeue.appended.bytes{topic,queue}        counter    their encoded size (By)
//	equeue.queue.min_offset{topic,queue}      gauge      lowest stored offset
//	equeue.queue.max_offset{topic,queue}      gauge      one past the last stored offset
//	equeue.group.lag{group,topic,queue}       gauge      messages not yet committed by the group
//	equeue.group.members{group}               gauge      live members of the group
//	equeue.retries{group}                     counter    messages sent to the group's retry topic
//	equeue.dead_letters{group}                counter    messages sent to the group's dead letters
//	equeue.store.bytes                        gauge      size of the store (By)
//	equeue.corrupt_records                    counter    records found with a failed checksum, each once
//	equeue.expired_messages                   counter    messages groups skipped because their TTL ran out
//	equeue.deleted_topic_retries              counter    retry copies groups skipped because their origin topic was deleted
//	equeue.dedup.ids                          gauge      message IDs the dedup windows hold in memory
//	equeue.lost_dedup_groups                  counter    dedup groups found unreadable at open and forgotten
//	equeue.unsupported_format_pulls           counter    pulls refused at a record of a newer format version
//	equeue.no_space_refusals                  counter    store writes refused because the disk is nearly full
//	equeue.consumer.hook_panics               counter    panics of in-process producers' and consumers' hooks, recovered
//	equeue.pull.duration{topic,result}        histogram  time of each pull, long-poll wait included (s)
//	equeue.pulled.messages{topic}             counter    messages returned by pulls
//	equeue.handler.duration{topic}            histogram  time handlers took (s, Hooks)
//	equeue.handler.errors{topic}              counter    handler errors and panics (Hooks)
//
// Every reply topic (request-reply: one per requesting producer, named at
// random) is one attribute value in the pull and handler instruments,
// equeue.ReplyTopicPrefix, so requesters that come and go add no attribute
// sets (the SDK keeps each set it has seen for as long as it runs).
//
// Make it before opening the engine, pass it as Options.Observer (alone, or
// with a Prometheus collector through Observers), then Attach the engine.
// It is safe for concurrent use. Close unregisters its callback.
type Metrics struct {
	timeout time.Duration
	eng     atomic.Pointer[equeue.Engine]
	reg     metric.Registration

	pullDuration    metric.Float64Histogram
	pulledMessages  metric.Int64Counter
	handlerDuration metric.Float64Histogram
	handlerErrors   metric.Int64Counter

	appendedMessages metric.Int64ObservableCounter
	appendedBytes    metric.Int64ObservableCounter
	minOffset        metric.Int64ObservableGauge
	maxOffset        metric.Int64ObservableGauge
	groupLag         metric.Int64ObservableGauge
	groupMembers     metric.Int64ObservableGauge
	retries          metric.Int64ObservableCounter
	deadLetters      metric.Int64ObservableCounter
	storeBytes       metric.Int64ObservableGauge
	corruptRecords   metric.Int64ObservableCounter
	expiredMessages  metric.Int64ObservableCounter
	deletedRetries   metric.Int64ObservableCounter
	noSpaceRefusals  metric.Int64ObservableCounter
	dedupIDs         metric.Int64ObservableGauge
	lostDedupGroups  metric.Int64ObservableCounter
	unsupported      metric.Int64ObservableCounter
	hookPanics       metric.Int64ObservableCounter
	parkedDelayed    metric.Int64ObservableGauge
}

var _ equeue.Observer = (*Metrics)(nil)

// NewMetrics returns Metrics with no engine attached yet: until Attach, only
// pulls and handling are recorded.
func NewMetrics(opts *MetricsOptions) (*Metrics, error) {
	var o MetricsOptions
	if opts != nil {
		o = *opts
	}
	if o.MeterProvider == nil {
		o.MeterProvider = gotel.GetMeterProvider()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultCollectTimeout
	}
	mt := o.MeterProvider.Meter(ScopeName)
	m := &Metrics{timeout: o.Timeout}
	var errs []error
	must := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	var err error
	m.pullDuration, err = mt.Float64Histogram("equeue.pull.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of pulls, long-poll wait included, by topic and whether messages were returned."),
		metric.WithExplicitBucketBoundaries(pullBuckets...))
	must(err)
	m.pulledMessages, err = mt.Int64Counter("equeue.pulled.messages", metric.WithUnit("{message}"),
		metric.WithDescription("Messages returned by pulls, by topic."))
	must(err)
	m.handlerDuration, err = mt.Float64Histogram("equeue.handler.duration", metric.WithUnit("s"),
		metric.WithDescription("Time message handlers took, by the message's topic (failed attempts included; a batch handler's call is shared equally among its messages)."),
		metric.WithExplicitBucketBoundaries(handlerBuckets...))
	must(err)
	m.handlerErrors, err = mt.Int64Counter("equeue.handler.errors", metric.WithUnit("{error}"),
		metric.WithDescription("Message handler calls that returned an error or panicked, by the message's topic."))
	must(err)
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := mt.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		must(err)
		return c
	}
	gauge := func(name, unit, desc string) metric.Int64ObservableGauge {
		g, err := mt.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		must(err)
		return g
	}
	m.appendedMessages = counter("equeue.appended.messages", "{message}", "Messages appended to a queue since the engine opened.")
	m.appendedBytes = counter("equeue.appended.bytes", "By", "Encoded bytes appended to a queue since the engine opened.")
	m.minOffset = gauge("equeue.queue.min_offset", "{offset}", "Lowest offset still stored in a queue.")
	m.maxOffset = gauge("equeue.queue.max_offset", "{offset}", "One past the last stored offset of a queue.")
	m.groupLag = gauge("equeue.group.lag", "{message}", "Messages of a queue not yet committed by a consumer group (the slowest member in a broadcasting group).")
	m.groupMembers = gauge("equeue.group.members", "{member}", "Live members of a consumer group.")
	m.retries = counter("equeue.retries", "{message}", "Failed messages a consumer group sent to its retry topic since the engine opened.")
	m.deadLetters = counter("equeue.dead_letters", "{message}", "Messages a consumer group sent to its dead-letter topic since the engine opened.")
	m.storeBytes = gauge("equeue.store.bytes", "By", "Size of the engine's store in bytes.")
	m.corruptRecords = counter("equeue.corrupt_records", "{record}", "Records that failed their checksum, each counted once by the first read that found it, since the engine opened.")
	m.expiredMessages = counter("equeue.expired_messages", "{message}", "Messages consumer groups skipped because their time-to-live ran out, since the engine opened (reads without a group do not count).")
	m.deletedRetries = counter("equeue.deleted_topic_retries", "{message}", "Retry copies consumer groups skipped because their origin topic was deleted (or deleted and made again), since the engine opened (reads without a group do not count).")
	m.noSpaceRefusals = counter("equeue.no_space_refusals", "{write}", "Store writes refused because the disk is nearly full (ErrNoSpace), since the engine opened.")
	m.dedupIDs = gauge("equeue.dedup.ids", "{id}", "Message IDs the topics' dedup windows hold in memory.")
	m.lostDedupGroups = counter("equeue.lost_dedup_groups", "{group}", "Dedup groups the engine's open found unreadable and forgot: their message IDs are no longer deduplicated.")
	m.unsupported = counter("equeue.unsupported_format_pulls", "{pull}", "Pulls refused because the record at their offset is of a format version the engine cannot read (written by a newer engine): consumers stop there.")
	m.hookPanics = counter("equeue.consumer.hook_panics", "{panic}", "Panics of in-process producers' and consumers' hooks, recovered rather than passed on to a caller (a consumer's, also logged; a SendAsync's AfterSend and trace end, also in its future's error), since the engine opened.")
	m.parkedDelayed = gauge("equeue.delayed.parked_messages", "{message}", "Due delayed messages stuck because no store write can hold their move into their queue: pending until the engine is opened on a store that takes them.")
	if len(errs) > 0 {
		return nil, fmt.Errorf("equeue/otel: instruments: %w", errors.Join(errs...))
	}
	m.reg, err = mt.RegisterCallback(m.observe, m.appendedMessages, m.appendedBytes, m.minOffset, m.maxOffset,
		m.groupLag, m.groupMembers, m.retries, m.deadLetters, m.storeBytes, m.corruptRecords, m.expiredMessages, m.noSpaceRefusals, m.dedupIDs, m.lostDedupGroups, m.unsupported, m.hookPanics, m.deletedRetries, m.parkedDelayed)
	if err != nil {
		return nil, fmt.Errorf("equeue/otel: register callback: %w", err)
	}
	return m, nil
}

// Attach makes Metrics read e's state from the next collection on.
// Attach(nil) detaches the engine.
func (m *Metrics) Attach(e *equeue.Engine) { m.eng.Store(e) }

// Close unregisters the collection callback. Idempotent.
func (m *Metrics) Close() error {
	if m.reg == nil {
		return nil
	}
	return m.reg.Unregister()
}

// ObservePull records one pull. The engine calls it when Metrics is (or is
// one of) its Options.Observer.
func (m *Metrics) ObservePull(topic string, _ int, took time.Duration, messages int) {
	ctx := context.Background()
	topic = topicAttr(topic)
	result := ResultEmpty
	if messages > 0 {
		result = ResultMessages
		m.pulledMessages.Add(ctx, int64(messages), metric.WithAttributes(attribute.String("topic", topic)))
	}
	m.pullDuration.Record(ctx, took.Seconds(), metric.WithAttributes(attribute.String("topic", topic), attribute.String("result", result)))
}

// topicAttr is the topic attribute of a topic: its name, or for every
// reply topic equeue.ReplyTopicPrefix.
func topicAttr(topic string) string {
	if equeue.IsReplyTopic(topic) {
		return equeue.ReplyTopicPrefix
	}
	return topic
}

// Hooks returns consumer hooks that record handler time and errors by
// topic, under the engine's name of the topic (Message.EngineTopic), the
// name the pull, queue and lag instruments carry.
func (m *Metrics) Hooks() equeue.Hooks {
	return equeue.Hooks{
		AfterHandle: func(ctx context.Context, msg *equeue.Message, err error, took time.Duration) {
			// The engine's name, as the pull instruments have it: a consumer
			// on a Namespace gets its messages under the namespace's names.
			at := metric.WithAttributes(attribute.String("topic", topicAttr(msg.EngineTopic())))
			m.handlerDuration.Record(ctx, took.Seconds(), at)
			if err != nil {
				m.handlerErrors.Add(ctx, 1, at)
			}
		},
	}
}

// observe reports the attached engine's state.
func (m *Metrics) observe(ctx context.Context, o metric.Observer) error {
	e := m.eng.Load()
	if e == nil {
		return nil
	}
	retries := map[string]int64{}
	dead := map[string]int64{}
	for _, q := range e.QueueStats() {
		at := metric.WithAttributes(attribute.String("topic", q.Topic), attribute.String("queue", strconv.Itoa(q.Queue)))
		o.ObserveInt64(m.appendedMessages, int64(q.Appended), at)
		o.ObserveInt64(m.appendedBytes, int64(q.AppendedBytes), at)
		o.ObserveInt64(m.minOffset, q.MinOffset, at)
		o.ObserveInt64(m.maxOffset, q.MaxOffset, at)
		if g, ok := strings.CutPrefix(q.Topic, equeue.RetryTopicPrefix); ok {
			retries[g] += int64(q.SentBack)
		} else if g, ok := strings.CutPrefix(q.Topic, equeue.DLQTopicPrefix); ok {
			dead[g] += int64(q.SentBack)
		}
	}
	for g, n := range retries {
		o.ObserveInt64(m.retries, n, metric.WithAttributes(attribute.String("group", g)))
	}
	for g, n := range dead {
		o.ObserveInt64(m.deadLetters, n, metric.WithAttributes(attribute.String("group", g)))
	}
	s := e.Stats()
	o.ObserveInt64(m.storeBytes, s.StoreBytes)
	o.ObserveInt64(m.corruptRecords, int64(s.CorruptRecords))
	o.ObserveInt64(m.expiredMessages, int64(s.ExpiredMessages))
	o.ObserveInt64(m.deletedRetries, int64(s.DeletedTopicRetries))
	o.ObserveInt64(m.noSpaceRefusals, int64(s.NoSpaceRefusals))
	o.ObserveInt64(m.dedupIDs, s.DedupIDs)
	o.ObserveInt64(m.lostDedupGroups, int64(s.LostDedupGroups))
	o.ObserveInt64(m.unsupported, int64(s.UnsupportedFormatPulls))
	o.ObserveInt64(m.hookPanics, int64(s.ConsumerHookPanics))
	o.ObserveInt64(m.parkedDelayed, s.ParkedDelayedMessages)

	gctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	groups, err := e.Groups(gctx)
	if errors.Is(err, equeue.ErrClosed) {
		return nil // a closed engine has no live groups
	}
	if err != nil {
		return fmt.Errorf("equeue/otel: list groups: %w", err)
	}
	for _, g := range groups {
		o.ObserveInt64(m.groupMembers, int64(len(g.Members)), metric.WithAttributes(attribute.String("group", g.Name)))
		// Each queue once: a broadcasting group's slowest member.
		for _, q := range g.QueueLags() {
			o.ObserveInt64(m.groupLag, q.Lag, metric.WithAttributes(attribute.String("group", g.Name),
				attribute.String("topic", q.Topic), attribute.String("queue", strconv.Itoa(q.Queue))))
		}
	}
	return nil
}

// Observers returns an Observer that passes every event to each of obs
// (nil ones skipped), so an engine can feed a Prometheus collector,
// Metrics and a Tracer's Observer at once. It is a MoveObserver when one
// of obs is.
func Observers(obs ...equeue.Observer) equeue.Observer {
	var (
		list  tee
		moves bool
	)
	for _, o := range obs {
		if o == nil {
			continue
		}
		list = append(list, o)
		if _, ok := o.(equeue.MoveObserver); ok {
			moves = true
		}
	}
	switch {
	case len(list) == 1:
		return list[0]
	case moves:
		return moveTee{list}
	}
	return list
}

type tee []equeue.Observer

func (t tee) ObservePull(topic string, queue int, took time.Duration, messages int) {
	for _, o := range t {
		o.ObservePull(topic, queue, took, messages)
	}
}

// moveTee is a tee with a MoveObserver among its observers.
type moveTee struct{ tee }

func (t moveTee) ObserveMove(ctx context.Context, ev equeue.MoveEvent) {
	for _, o := range t.tee {
		if mo, ok := o.(equeue.MoveObserver); ok {
			mo.ObserveMove(ctx, ev)
		}
	}
}
