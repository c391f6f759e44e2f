// Package metrics exports an equeue engine as Prometheus metrics.
//
// A Collector reads the engine's counters, queue offsets and group lag when
// it is scraped, and records pulls (as the engine's Options.Observer) and
// message handling (through Hooks) as they happen. The engine has to be
// opened with its Observer, so a Collector can be made first and attached
// afterwards:
//
//	m := metrics.New()
//	eng, err := equeue.Open(dir, &equeue.Options{Observer: m})
//	...
//	m.Attach(eng)
//	prometheus.MustRegister(m)
//
//	c, _ := equeue.NewConsumer(eng, equeue.ConsumerOptions{..., Hooks: []equeue.Hooks{m.Hooks()}})
//
// Metric names (all with the prefix equeue_):
//
//	appended_messages_total{topic,queue}    counter  messages appended since the engine opened
//	appended_bytes_total{topic,queue}       counter  their encoded size
//	queue_min_offset{topic,queue}           gauge    lowest stored offset
//	queue_max_offset{topic,queue}           gauge    one past the last stored offset
//	group_lag{group,topic,queue}            gauge    messages not yet committed by the group
//	group_members{group}                    gauge    live members of the group
//	retries_total{group}                    counter  messages sent to the group's retry topic
//	dead_letters_total{group}               counter  messages sent to the group's dead-letter topic
//	store_bytes                             gauge    size of the store
//	corrupt_records_total                   counter  records found with a failed checksum, each once
//	expired_messages_total                  counter  messages groups skipped because their TTL ran out
//	deleted_topic_retries_total             counter  retry copies groups skipped because their origin topic was deleted
//	dedup_ids                               gauge    message IDs the dedup windows hold in memory
//	lost_dedup_groups_total                 counter  dedup groups found unreadable at open and forgotten
//	unsupported_format_pulls_total          counter  pulls refused at a record of a newer format version
//	no_space_refusals_total                 counter  store writes refused because the disk is nearly full
//	consumer_hook_panics_total              counter  panics of in-process producers' and consumers' hooks, recovered
//	pull_duration_seconds{topic,result}     histogram time of each pull, long-poll wait included
//	pulled_messages_total{topic}            counter  messages returned by pulls
//	handler_duration_seconds{topic}         histogram time handlers took (Hooks)
//	handler_errors_total{topic}             counter  handler errors and panics (Hooks)
//
// The topic label is the engine's name of a topic throughout: a consumer
// on a Namespace handles "orders", whose handler series carry
// "tenant:orders" as its pull, queue and lag series do.
//
// Reply topics (request-reply: one per requesting producer, named at
// random, deleted when it closes) are one label value in the pull and
// handler metrics, equeue.ReplyTopicPrefix, so requesters that come and
// go add no series. The series of a topic that was deleted are dropped at
// the Collector's next scrape (Observer.ForgetTopic for an Observer used
// without one).
//
// Counters read from the engine start again from zero when it is reopened,
// which Prometheus treats as a counter reset. To export several engines
// from one process, register each Collector through
// prometheus.WrapRegistererWith with a distinguishing label.
package metrics

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/equeue-go/equeue"
)

const namespace = "equeue"

// Pull results, the values of the "result" label of pull_duration_seconds.
const (
	// ResultMessages labels pulls that returned at least one message.
	ResultMessages = "messages"
	// ResultEmpty labels pulls that returned none (end of queue after the
	// long-poll wait, no match, moved offset, or an error).
	ResultEmpty = "empty"
)

// Bucket boundaries, in seconds. Pulls include their long-poll wait (up to
// 15 s by default), so their buckets reach further than a store read needs.
var (
	pullBuckets    = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 20}
	handlerBuckets = []float64{.0001, .0005, .001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
)

// Observer records engine events as they happen: pulls, reported by the
// engine when the Observer is its Options.Observer, and handling, reported
// through Hooks. It is safe for concurrent use.
//
// An Observer is a prometheus.Collector of those event metrics alone. A
// Collector embeds one (see CollectorOptions.Observer); register either the
// Collector or a bare Observer, not both.
type Observer struct {
	pullDuration    *prometheus.HistogramVec
	pulledMessages  *prometheus.CounterVec
	handlerDuration *prometheus.HistogramVec
	handlerErrors   *prometheus.CounterVec

	topics sync.Map // topic label values in use (not reply topics): read per event, written once per topic

	// testHookWrite, when set by a test, runs with an event's topic label
	// just before the event's series are written.
	testHookWrite func(label string)
}

var _ equeue.Observer = (*Observer)(nil)

// NewObserver returns an Observer with no observations yet.
func NewObserver() *Observer {
	return &Observer{
		pullDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "pull_duration_seconds",
			Help:      "Duration of pulls, long-poll wait included, by topic and whether messages were returned.",
			Buckets:   pullBuckets,
		}, []string{"topic", "result"}),
		pulledMessages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "pulled_messages_total",
			Help:      "Messages returned by pulls, by topic.",
		}, []string{"topic"}),
		handlerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: namespace,
			Name:      "handler_duration_seconds",
			Help:      "Time message handlers took, by the message's topic (failed attempts included; a batch handler's call is shared equally among its messages).",
			Buckets:   handlerBuckets,
		}, []string{"topic"}),
		handlerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace,
			Name:      "handler_errors_total",
			Help:      "Message handler calls that returned an error or panicked, by the message's topic.",
		}, []string{"topic"}),
	}
}

// topicLabel is the topic label of a topic: its name, or for every reply
// topic equeue.ReplyTopicPrefix.
func topicLabel(topic string) string {
	if equeue.IsReplyTopic(topic) {
		return equeue.ReplyTopicPrefix
	}
	return topic
}

// wrote remembers label, whose series an event has just written, so they
// can be dropped once the topic is gone (Collector.Collect). After the
// write, not before: a ForgetTopic that ran between a look before and the
// write would leave series made again that no scrape knew of, kept for as
// long as the process runs. Remembered after, the write is either dropped
// by a ForgetTopic that follows it or remembered for the next scrape.
func (o *Observer) wrote(label string) {
	if label == equeue.ReplyTopicPrefix {
		return
	}
	if _, ok := o.topics.Load(label); !ok {
		o.topics.Store(label, struct{}{})
	}
}

// ObservePull records one pull. The engine calls it when the Observer is its
// Options.Observer.
func (o *Observer) ObservePull(topic string, _ int, took time.Duration, messages int) {
	topic = topicLabel(topic)
	if h := o.testHookWrite; h != nil {
		h(topic)
	}
	result := ResultEmpty
	if messages > 0 {
		result = ResultMessages
		o.pulledMessages.WithLabelValues(topic).Add(float64(messages))
	}
	o.pullDuration.WithLabelValues(topic, result).Observe(took.Seconds())
	o.wrote(topic)
}

// Hooks returns consumer hooks that record handler time and errors by
// topic, under the engine's name of the topic (Message.EngineTopic: the
// qualified "tenant:orders" for a consumer on a Namespace), the name the
// engine's pull, queue and lag series carry. Pass them in
// ConsumerOptions.Hooks (a PullConsumer runs no handlers: it has none).
func (o *Observer) Hooks() equeue.Hooks {
	return equeue.Hooks{
		AfterHandle: func(_ context.Context, m *equeue.Message, err error, took time.Duration) {
			// The engine's name, as the pull series have it: a consumer on
			// a Namespace gets its messages under the namespace's names.
			topic := topicLabel(m.EngineTopic())
			if h := o.testHookWrite; h != nil {
				h(topic)
			}
			o.handlerDuration.WithLabelValues(topic).Observe(took.Seconds())
			if err != nil {
				o.handlerErrors.WithLabelValues(topic).Inc()
			}
			o.wrote(topic)
		},
	}
}

// ForgetTopic drops the series of a topic (a deleted one: its counts
// would otherwise be exported for as long as the process runs). A
// Collector does it for the topics its engine no longer has.
func (o *Observer) ForgetTopic(topic string) {
	o.topics.Delete(topic)
	match := prometheus.Labels{"topic": topic}
	o.pullDuration.DeletePartialMatch(match)
	o.pulledMessages.DeletePartialMatch(match)
	o.handlerDuration.DeletePartialMatch(match)
	o.handlerErrors.DeletePartialMatch(match)
}

// seenTopics returns the topics the Observer has series of.
func (o *Observer) seenTopics() []string {
	var names []string
	o.topics.Range(func(k, _ any) bool {
		names = append(names, k.(string))
		return true
	})
	return names
}

// Describe implements prometheus.Collector.
func (o *Observer) Describe(ch chan<- *prometheus.Desc) {
	o.pullDuration.Describe(ch)
	o.pulledMessages.Describe(ch)
	o.handlerDuration.Describe(ch)
	o.handlerErrors.Describe(ch)
}

// Collect implements prometheus.Collector.
func (o *Observer) Collect(ch chan<- prometheus.Metric) {
	o.pullDuration.Collect(ch)
	o.pulledMessages.Collect(ch)
	o.handlerDuration.Collect(ch)
	o.handlerErrors.Collect(ch)
}
