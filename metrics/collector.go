package metrics

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/equeue-go/equeue"
)

// DefaultTimeout bounds how long one scrape waits for the engine's group
// listing.
const DefaultTimeout = 5 * time.Second

// CollectorOptions configure a Collector. A nil *CollectorOptions, and every
// zero field, means the documented default.
type CollectorOptions struct {
	// Observer records pulls and handling. Nil means a new one; pass the
	// Observer the engine was opened with to export its pull metrics.
	Observer *Observer
	// Timeout bounds how long a scrape waits for the engine's group
	// listing. Zero means DefaultTimeout.
	Timeout time.Duration
}

// Collector is a prometheus.Collector of an engine's metrics (see the
// package documentation for the list). It is also an equeue.Observer, so it
// can be the engine's Options.Observer itself, and its Hooks record handler
// metrics. It is safe for concurrent use.
type Collector struct {
	obs     *Observer
	timeout time.Duration
	eng     atomic.Pointer[equeue.Engine]

	appendedMessages *prometheus.Desc
	appendedBytes    *prometheus.Desc
	minOffset        *prometheus.Desc
	maxOffset        *prometheus.Desc
	groupLag         *prometheus.Desc
	groupMembers     *prometheus.Desc
	retries          *prometheus.Desc
	deadLetters      *prometheus.Desc
	storeBytes       *prometheus.Desc
	corruptRecords   *prometheus.Desc
	expiredMessages  *prometheus.Desc
	deletedRetries   *prometheus.Desc
	noSpaceRefusals  *prometheus.Desc
	dedupIDs         *prometheus.Desc
	lostDedupGroups  *prometheus.Desc
	unsupported      *prometheus.Desc
	hookPanics       *prometheus.Desc
	parkedDelayed    *prometheus.Desc
}

var (
	_ prometheus.Collector = (*Collector)(nil)
	_ equeue.Observer      = (*Collector)(nil)
)

// New returns a Collector with no engine yet: pass it as Options.Observer
// to equeue.Open, then Attach the engine. It is NewCollector(nil, nil).
func New() *Collector { return NewCollector(nil, nil) }

// NewCollector returns a Collector of e. e may be nil and attached later
// with Attach; until then only the event metrics (pulls, handling) are
// exported.
func NewCollector(e *equeue.Engine, opts *CollectorOptions) *Collector {
	var o CollectorOptions
	if opts != nil {
		o = *opts
	}
	if o.Observer == nil {
		o.Observer = NewObserver()
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	queueLabels := []string{"topic", "queue"}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
	}
	c := &Collector{
		obs:              o.Observer,
		timeout:          o.Timeout,
		appendedMessages: desc("appended_messages_total", "Messages appended to a queue since the engine opened.", queueLabels...),
		appendedBytes:    desc("appended_bytes_total", "Encoded bytes appended to a queue since the engine opened.", queueLabels...),
		minOffset:        desc("queue_min_offset", "Lowest offset still stored in a queue.", queueLabels...),
		maxOffset:        desc("queue_max_offset", "One past the last stored offset of a queue: the offset the next message gets.", queueLabels...),
		groupLag:         desc("group_lag", "Messages of a queue not yet committed by a consumer group (the slowest member in a broadcasting group).", "group", "topic", "queue"),
		groupMembers:     desc("group_members", "Live members of a consumer group.", "group"),
		retries:          desc("retries_total", "Failed messages a consumer group sent to its retry topic since the engine opened.", "group"),
		deadLetters:      desc("dead_letters_total", "Messages a consumer group sent to its dead-letter topic since the engine opened.", "group"),
		storeBytes:       desc("store_bytes", "Size of the engine's store in bytes."),
		corruptRecords:   desc("corrupt_records_total", "Records that failed their checksum, each counted once by the first read that found it, since the engine opened."),
		expiredMessages:  desc("expired_messages_total", "Messages consumer groups skipped because their time-to-live ran out, since the engine opened (reads without a group do not count)."),
		deletedRetries:   desc("deleted_topic_retries_total", "Retry copies consumer groups skipped because their origin topic was deleted (or deleted and made again), since the engine opened (reads without a group do not count)."),
		noSpaceRefusals:  desc("no_space_refusals_total", "Store writes refused because the disk is nearly full (ErrNoSpace), since the engine opened."),
		dedupIDs:         desc("dedup_ids", "Message IDs the topics' dedup windows hold in memory."),
		lostDedupGroups:  desc("lost_dedup_groups_total", "Dedup groups the engine's open found unreadable and forgot: their message IDs are no longer deduplicated."),
		unsupported:      desc("unsupported_format_pulls_total", "Pulls refused because the record at their offset is of a format version the engine cannot read (written by a newer engine): consumers stop there."),
		hookPanics:       desc("consumer_hook_panics_total", "Panics of in-process producers' and consumers' hooks, recovered rather than passed on to a caller (a consumer's, also logged; a SendAsync's AfterSend and trace end, also in its future's error), since the engine opened."),
		parkedDelayed:    desc("delayed_parked_messages", "Due delayed messages stuck because no store write can hold their move into their queue: pending until the engine is opened on a store that takes them."),
	}
	if e != nil {
		c.eng.Store(e)
	}
	return c
}

// Attach makes the Collector export e's metrics from the next scrape on.
// Attach(nil) detaches the engine, leaving the event metrics.
func (c *Collector) Attach(e *equeue.Engine) { c.eng.Store(e) }

// Observer returns the Observer that records the Collector's event metrics.
func (c *Collector) Observer() *Observer { return c.obs }

// ObservePull records one pull; see Observer.ObservePull.
func (c *Collector) ObservePull(topic string, queue int, took time.Duration, messages int) {
	c.obs.ObservePull(topic, queue, took, messages)
}

// Hooks returns consumer hooks that record handler time and errors; see
// Observer.Hooks.
func (c *Collector) Hooks() equeue.Hooks { return c.obs.Hooks() }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.appendedMessages, c.appendedBytes, c.minOffset, c.maxOffset, c.groupLag, c.groupMembers,
		c.retries, c.deadLetters, c.storeBytes, c.corruptRecords, c.expiredMessages, c.noSpaceRefusals, c.dedupIDs,
		c.lostDedupGroups, c.unsupported, c.hookPanics, c.deletedRetries, c.parkedDelayed,
	} {
		ch <- d
	}
	c.obs.Describe(ch)
}

// Collect implements prometheus.Collector. It reads the attached engine's
// queue counters, engine counters and consumer groups.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	e := c.eng.Load()
	if e == nil {
		c.obs.Collect(ch)
		return
	}
	// The event series of topics that are gone are dropped first. Only
	// topics the Observer had seen before the engine's list was read are
	// candidates: one created and seen since is not in the list yet.
	seen := c.obs.seenTopics()
	queues := e.QueueStats()
	live := make(map[string]bool, len(queues))
	for _, q := range queues {
		live[q.Topic] = true
	}
	for _, t := range seen {
		if !live[t] {
			c.obs.ForgetTopic(t)
		}
	}
	c.obs.Collect(ch)
	c.collectQueues(ch, queues)

	s := e.Stats()
	ch <- prometheus.MustNewConstMetric(c.storeBytes, prometheus.GaugeValue, float64(s.StoreBytes))
	ch <- prometheus.MustNewConstMetric(c.corruptRecords, prometheus.CounterValue, float64(s.CorruptRecords))
	ch <- prometheus.MustNewConstMetric(c.expiredMessages, prometheus.CounterValue, float64(s.ExpiredMessages))
	ch <- prometheus.MustNewConstMetric(c.deletedRetries, prometheus.CounterValue, float64(s.DeletedTopicRetries))
	ch <- prometheus.MustNewConstMetric(c.noSpaceRefusals, prometheus.CounterValue, float64(s.NoSpaceRefusals))
	ch <- prometheus.MustNewConstMetric(c.dedupIDs, prometheus.GaugeValue, float64(s.DedupIDs))
	ch <- prometheus.MustNewConstMetric(c.lostDedupGroups, prometheus.CounterValue, float64(s.LostDedupGroups))
	ch <- prometheus.MustNewConstMetric(c.unsupported, prometheus.CounterValue, float64(s.UnsupportedFormatPulls))
	ch <- prometheus.MustNewConstMetric(c.hookPanics, prometheus.CounterValue, float64(s.ConsumerHookPanics))
	ch <- prometheus.MustNewConstMetric(c.parkedDelayed, prometheus.GaugeValue, float64(s.ParkedDelayedMessages))

	c.collectGroups(ch, e)
}

func (c *Collector) collectQueues(ch chan<- prometheus.Metric, queues []equeue.QueueStats) {
	retries := map[string]uint64{}
	dead := map[string]uint64{}
	for _, q := range queues {
		queue := strconv.Itoa(q.Queue)
		ch <- prometheus.MustNewConstMetric(c.appendedMessages, prometheus.CounterValue, float64(q.Appended), q.Topic, queue)
		ch <- prometheus.MustNewConstMetric(c.appendedBytes, prometheus.CounterValue, float64(q.AppendedBytes), q.Topic, queue)
		ch <- prometheus.MustNewConstMetric(c.minOffset, prometheus.GaugeValue, float64(q.MinOffset), q.Topic, queue)
		ch <- prometheus.MustNewConstMetric(c.maxOffset, prometheus.GaugeValue, float64(q.MaxOffset), q.Topic, queue)
		if g, ok := strings.CutPrefix(q.Topic, equeue.RetryTopicPrefix); ok {
			retries[g] += q.SentBack
		} else if g, ok := strings.CutPrefix(q.Topic, equeue.DLQTopicPrefix); ok {
			dead[g] += q.SentBack
		}
	}
	for g, n := range retries {
		ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, float64(n), g)
	}
	for g, n := range dead {
		ch <- prometheus.MustNewConstMetric(c.deadLetters, prometheus.CounterValue, float64(n), g)
	}
}

func (c *Collector) collectGroups(ch chan<- prometheus.Metric, e *equeue.Engine) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	groups, err := e.Groups(ctx)
	if errors.Is(err, equeue.ErrClosed) {
		return // a closed engine has no live groups to report
	}
	if err != nil {
		ch <- prometheus.NewInvalidMetric(c.groupLag, err)
		return
	}
	for _, g := range groups {
		ch <- prometheus.MustNewConstMetric(c.groupMembers, prometheus.GaugeValue, float64(len(g.Members)), g.Name)
		// Each queue once: a broadcasting group's slowest member.
		for _, q := range g.QueueLags() {
			ch <- prometheus.MustNewConstMetric(c.groupLag, prometheus.GaugeValue, float64(q.Lag), g.Name, q.Topic, strconv.Itoa(q.Queue))
		}
	}
}
