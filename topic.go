package equeue

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Reserved topic prefixes: the engine owns these topics.
const (
	RetryTopicPrefix = "%RETRY%"
	DLQTopicPrefix   = "%DLQ%"
)

const maxNameLen = 127

// ValidateName reports whether s is a valid topic or group name: 1-127
// characters of [A-Za-z0-9._-], optionally qualified by a namespace as
// "namespace:name" (see Engine.Namespace), each part valid on its own.
func ValidateName(s string) error {
	if ns, name, ok := strings.Cut(s, NamespaceSeparator); ok {
		if err := validatePlainName(ns); err != nil {
			return fmt.Errorf("namespace of %q: %w", s, err)
		}
		return validatePlainName(name)
	}
	return validatePlainName(s)
}

// validatePlainName is ValidateName without a namespace.
func validatePlainName(s string) error {
	if len(s) == 0 || len(s) > maxNameLen {
		return fmt.Errorf("%w: %q must be 1-%d characters", ErrInvalidName, s, maxNameLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q has %q; use [A-Za-z0-9._-]", ErrInvalidName, s, c)
		}
	}
	return nil
}

// validateTopicName accepts user names and, when internal, the engine's
// %RETRY%<group> and %DLQ%<group> names.
func validateTopicName(s string, internal bool) error {
	if internal {
		for _, p := range []string{RetryTopicPrefix, DLQTopicPrefix, ReplyTopicPrefix} {
			if rest, ok := strings.CutPrefix(s, p); ok {
				return ValidateName(rest)
			}
		}
	}
	return ValidateName(s)
}

// RetryTopic returns the name of group's retry topic.
func RetryTopic(group string) string { return RetryTopicPrefix + group }

// DLQTopic returns the name of group's dead-letter topic.
func DLQTopic(group string) string { return DLQTopicPrefix + group }

// topic is the live state of one topic.
type topic struct {
	name    string
	id      uint32
	created time.Time
	queues  atomic.Pointer[[]*queue]
	deleted atomic.Bool
	// gate orders offset writes against deletion: offset commits of the
	// topic hold it shared and check deleted; DeleteTopic holds it
	// exclusively while it removes the topic and its offsets, so no commit
	// lands after the offsets were dropped.
	gate sync.RWMutex
	// retain serializes retention passes over the topic's queues and holds
	// what a failed delete left below the low watermark (see retention.go).
	retain retainState
	// dedup is the window in which a producer-supplied message ID is stored
	// only once; zero disables deduplication.
	dedup time.Duration
	// lanes is the number of priority lanes per queue (priority.go); 0 or
	// 1: none. Fixed at creation.
	lanes int
	// limits are the topic's own limits and defaults (topiclimits.go); nil
	// when it has none.
	limits atomic.Pointer[TopicLimits]
	// replyReads tracks the pulls of a reply topic (replyexpiry.go).
	replyReads replyReads
	// minMoves is odd while a queue's low watermark moves, and counts the
	// moves, so that a count over the queues can tell it read no move.
	minMoves atomic.Uint64
	// foundAt is one more than the TopicsVersion at which lookupTopic
	// last found the topic in the engine's map (topiclookup.go).
	foundAt atomic.Uint64
}

func (t *topic) queueList() []*queue { return *t.queues.Load() }

func (t *topic) queue(id int) (*queue, error) {
	qs := t.queueList()
	if id < 0 || id >= len(qs) {
		return nil, fmt.Errorf("%w: topic %q has %d queues, asked for %d", ErrQueueNotFound, t.name, len(qs), id)
	}
	return qs[id], nil
}

// topicMeta is the persisted form of a topic.
type topicMeta struct {
	Name      string        `json:"name"`
	ID        uint32        `json:"id"`
	Queues    int           `json:"queues"`
	ReadOnly  []int         `json:"read_only,omitempty"`
	Dedup     time.Duration `json:"dedup_window,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
	// Priorities is the number of priority lanes per queue (priority.go);
	// absent in topics stored before it existed, which have none.
	Priorities int          `json:"priorities,omitempty"`
	Limits     *TopicLimits `json:"limits,omitempty"`
}

// meta is the topic's current persisted form. Admin changes edit a copy,
// store it, and only then change the live topic.
func (t *topic) meta() topicMeta {
	m := topicMeta{Name: t.name, ID: t.id, CreatedAt: t.created, Dedup: t.dedup, Priorities: t.lanes, Limits: t.limits.Load()}
	for _, q := range t.queueList() {
		m.Queues++
		if !q.writable.Load() {
			m.ReadOnly = append(m.ReadOnly, q.id)
		}
	}
	return m
}

// Metadata keys.
var (
	keyTopicPrefix = []byte("topic/")
	keyTopicSeq    = []byte("seq/topic")
	keyWatermark   = []byte("wm/")
	// keyDropPrefix marks a deleted topic whose records may still be
	// stored: written with the deletion, removed once every queue was
	// dropped. Open finishes what a crash or a failed drop left.
	keyDropPrefix = []byte("drop/")
)

func dropKey(id uint32) []byte {
	return binary.BigEndian.AppendUint32(slices.Clone(keyDropPrefix), id)
}

func topicKey(name string) []byte { return append(slices.Clone(keyTopicPrefix), name...) }

func watermarkKey(q store.QueueID) []byte {
	k := slices.Clone(keyWatermark)
	k = binary.BigEndian.AppendUint32(k, q.Topic)
	return binary.BigEndian.AppendUint32(k, q.Queue)
}

// QueueInfo describes one queue.
type QueueInfo struct {
	// ID is the queue number within the topic, from 0.
	ID int
	// MinOffset is the lowest offset still stored.
	MinOffset int64
	// MaxOffset is one past the last stored offset: the offset the next message gets.
	MaxOffset int64
	// Writable is false once the queue is closed to producers.
	Writable bool
	// Messages counts the messages the queue stores: MaxOffset minus
	// MinOffset, less offsets known lost from the store (see the README's
	// Durability). A remote server older than this field sends none: the
	// remote client then gives MaxOffset minus MinOffset.
	Messages int64
}

// TopicInfo describes one topic.
type TopicInfo struct {
	// Name is the topic name.
	Name string
	// ID identifies this topic among every topic the engine ever had: it
	// is given at creation from a stored sequence that never goes back, so
	// a topic deleted and created again under its name gets another one,
	// however quickly (CreatedAt, in milliseconds, may be the same). It
	// stays the topic's across reopens and is the same on every node of a
	// cluster. A Namespace view shows another ID, the namespace's: the
	// engine's enciphered with a key the engine stores, so it tells
	// nothing of the topics other namespaces made; it is as unique and
	// stable in the view, but it is an engine's own (each node of a
	// cluster draws its key).
	ID uint32
	// CreatedAt is when the topic was created, rounded down to the
	// millisecond.
	CreatedAt time.Time
	// Queues lists the topic's queues in ID order.
	Queues []QueueInfo
	// Priorities is the number of priority lanes per queue, 0 for a topic
	// without priorities (see TopicOptions.Priorities): queue ID i is then
	// lane i % Priorities of queue i / Priorities.
	Priorities int
	// Limits are the topic's own limits and defaults (zero: none).
	Limits TopicLimits
	// Messages counts the messages stored over the queues, read so that no
	// deletion falls between the queues' reads: it is never more than the
	// topic held at the end of the read. Offsets known lost from the store
	// (see the README's Durability) are not counted.
	Messages int64
}

func (t *topic) info() TopicInfo {
	ti := TopicInfo{Name: t.name, ID: t.id, CreatedAt: t.created, Priorities: t.lanes, Limits: t.topicLimits()}
	for try := 0; ; try++ {
		moves := t.minMoves.Load()
		qs := t.queueList()
		ti.Queues, ti.Messages = slices.Grow(ti.Queues[:0], len(qs)), 0
		for _, q := range qs {
			qi := q.info()
			ti.Queues = append(ti.Queues, qi)
			ti.Messages += qi.Messages
		}
		if (moves%2 == 0 && t.minMoves.Load() == moves) || try == 100 {
			return ti
		}
		runtime.Gosched()
	}
}

// loadTopics restores every topic and each queue's bounds from the store,
// and finishes the cleanup of deleted topics.
func (e *Engine) loadTopics() error {
	e.finishDrops()
	var metas []topicMeta
	err := e.st.ScanMeta(keyTopicPrefix, func(_, v []byte) error {
		var m topicMeta
		if err := json.Unmarshal(v, &m); err != nil {
			return fmt.Errorf("%w: topic metadata: %v", ErrCorrupt, err)
		}
		metas = append(metas, m)
		return nil
	})
	if err != nil {
		return err
	}
	for _, m := range metas {
		t := &topic{name: m.Name, id: m.ID, created: m.CreatedAt, dedup: m.Dedup, lanes: m.Priorities}
		if m.Limits != nil {
			t.setLimits(*m.Limits)
		}
		qs := make([]*queue, 0, m.Queues)
		for i := 0; i < m.Queues; i++ {
			key := store.QueueID{Topic: m.ID, Queue: uint32(i)}
			first, next, ok, err := e.st.Bounds(key)
			if err != nil {
				return fmt.Errorf("equeue: bounds of %s/%d: %w", m.Name, i, unsupportedSegment(err))
			}
			wm, err := e.loadWatermark(key)
			if err != nil {
				return err
			}
			if !ok {
				first, next = wm, wm
			}
			if first < wm {
				// A delete below the watermark failed or was cut short by a
				// crash: finish it now, or on the first retention pass.
				if err := e.st.DeleteRange(key, first, wm); err != nil {
					e.log.Warn("deleting records below the watermark", "topic", m.Name, "queue", i, "err", err)
					t.retain.unswept(i, int64(first))
				}
			}
			qs = append(qs, newQueue(t, i, int64(max(first, wm)), int64(max(next, wm))))
		}
		for _, id := range m.ReadOnly {
			if id >= 0 && id < len(qs) {
				qs[id].writable.Store(false)
			}
		}
		t.queues.Store(&qs)
		if t.maxBytesOf() > 0 { // TopicLimits.MaxBytes: count what is stored
			if err := e.countBytes(t); err != nil {
				return err
			}
		}
		e.topics[t.name] = t
		e.topicIDs[t.id] = t
	}
	if err := e.loadLost(); err != nil {
		return err
	}
	return e.loadOwed()
}

func (e *Engine) loadWatermark(q store.QueueID) (uint64, error) {
	v, err := e.st.GetMeta(watermarkKey(q))
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: watermark of %v", ErrCorrupt, q)
	}
	return binary.BigEndian.Uint64(v), nil
}

// topicOp is the store operation that saves m.
func topicOp(m topicMeta) (store.MetaOp, error) {
	v, err := json.Marshal(m)
	if err != nil {
		return store.MetaOp{}, err
	}
	return store.MetaOp{Key: topicKey(m.Name), Value: v}, nil
}

// saveTopicMeta stores m, the next persisted form of a live topic (see
// storeMeta for applied).
func (e *Engine) saveTopicMeta(m topicMeta) (applied bool, err error) {
	op, err := topicOp(m)
	if err != nil {
		return false, err
	}
	return e.storeMeta(op)
}

// writeMeta writes metadata through the writer, as one command, and makes
// it durable under the engine's policy. An error matching ErrIndeterminate
// means the write was taken but not made durable; any other error means
// nothing was written.
func (e *Engine) writeMeta(ops ...store.MetaOp) error {
	return e.submit(context.Background(), e.metaCommand(ops, false))
}

// CreateTopic creates a topic with the given number of queues (0 means
// Options.DefaultQueues). It returns ErrTopicExists if the topic exists.
func (e *Engine) CreateTopic(ctx context.Context, name string, queues int) error {
	return e.createTopic(ctx, name, TopicOptions{Queues: queues}, false)
}

// TopicOptions configure a new topic.
type TopicOptions struct {
	// Queues is the queue count; 0 means Options.DefaultQueues.
	Queues int
	// DedupWindow, when positive, makes the topic idempotent for messages
	// with a producer-supplied ID: a send whose every message ID was stored
	// in this topic within the window, as one send stored them (one queue,
	// consecutive offsets, in this order), is acknowledged with the
	// original queue and offsets and stores nothing again; one whose IDs
	// the window holds in part, or stored apart, is refused with
	// ErrPartialDuplicate and stores nothing. A send with a message without
	// an ID is neither: it is stored, and the IDs it carries recorded.
	DedupWindow time.Duration
	// Priorities, when 2 or more, gives each queue that many priority
	// lanes, 2 to MaxPriorities (see Message.Priority and priority.go):
	// the topic then stores Queues x Priorities queues. 0 or 1 means none.
	// Fixed at creation.
	Priorities int
	// Limits are the topic's limits and defaults (see TopicLimits); the
	// zero value sets none. Engine.SetTopicLimits changes them later.
	Limits TopicLimits
}

// CreateTopicWith creates a topic with options.
func (e *Engine) CreateTopicWith(ctx context.Context, name string, o TopicOptions) error {
	if o.DedupWindow < 0 {
		return fmt.Errorf("%w: negative dedup window", ErrInvalidArgument)
	}
	if o.Priorities < 0 || o.Priorities > MaxPriorities {
		return fmt.Errorf("%w: priorities %d not in 0..%d", ErrInvalidArgument, o.Priorities, MaxPriorities)
	}
	if o.Priorities == 1 {
		o.Priorities = 0 // one lane is no priority
	}
	if err := o.Limits.Validate(); err != nil {
		return err
	}
	return e.createTopic(ctx, name, o, false)
}

func (e *Engine) createTopic(ctx context.Context, name string, o TopicOptions, internal bool) error {
	queues := o.Queues
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := validateTopicName(name, internal); err != nil {
		return err
	}
	if queues == 0 {
		queues = e.opts.DefaultQueues
	}
	// In the caller's terms: queues (of lanes lanes each), not queue IDs.
	lanes := max(o.Priorities, 1)
	if queues < 1 || queues > MaxQueuesPerTopic/lanes { // before the product, which could wrap
		return fmt.Errorf("%w: queue count %d not in 1..%d%s", ErrInvalidArgument, queues, MaxQueuesPerTopic/lanes, lanesNote(lanes))
	}
	queues *= lanes // one queue per lane: at most MaxQueuesPerTopic
	e.adminMu.Lock()
	defer e.adminMu.Unlock()
	if _, ok := e.lookupTopic(name); ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	if err := e.deleteRedrivenLeftovers(name); err != nil {
		return fmt.Errorf("equeue: create topic %q: %w", name, err)
	}
	id, seq, err := e.nextTopicID()
	if err != nil {
		return err
	}
	t := &topic{name: name, id: id, created: time.Now().UTC().Truncate(time.Millisecond), dedup: o.DedupWindow, lanes: o.Priorities}
	t.setLimits(o.Limits)
	qs := make([]*queue, queues)
	for i := range qs {
		qs[i] = newQueue(t, i, 0, 0)
	}
	t.queues.Store(&qs)
	op, err := topicOp(t.meta())
	if err != nil {
		return err
	}
	// The sequence and the topic are one write: a failure leaves neither.
	applied, err := e.storeMeta(op, seq)
	if !applied {
		return fmt.Errorf("equeue: create topic %q: %w", name, err)
	}
	e.mu.Lock()
	e.topics[name] = t
	e.topicIDs[t.id] = t
	e.topicsVersion.Add(1)
	e.mu.Unlock()
	e.log.Info("topic created", "topic", name, "queues", queues)
	e.notifyTopicChange(name)
	return notDurable(err, "create topic %q", name)
}

// nextTopicID returns the next topic ID and the operation that stores the
// raised sequence; the caller writes it together with the new topic.
// adminMu must be held.
func (e *Engine) nextTopicID() (uint32, store.MetaOp, error) {
	var id uint32
	v, err := e.st.GetMeta(keyTopicSeq)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return 0, store.MetaOp{}, err
	case len(v) == 4:
		id = binary.BigEndian.Uint32(v)
	default:
		return 0, store.MetaOp{}, fmt.Errorf("%w: topic sequence", ErrCorrupt)
	}
	id++
	return id, store.MetaOp{Key: keyTopicSeq, Value: binary.BigEndian.AppendUint32(nil, id)}, nil
}

// AddQueues adds n queues to a live topic (with all their lanes in a topic
// with priorities: n x Priorities queue IDs). Producers see them on their
// next route refresh; consumer groups rebalance at once. A group consuming
// the topic from the latest message starts the new queues at their first
// message (see startsOfAddedQueues). It returns ErrInvalidArgument for an n
// below 1, or one that would take the topic past MaxQueuesPerTopic queue
// IDs (an n below 1 or above MaxQueuesPerTopic also for a topic that does
// not exist), ErrInvalidName for a name no topic can have, and
// ErrTopicNotFound for an unknown topic.
func (e *Engine) AddQueues(ctx context.Context, name string, n int) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if n < 1 || n > MaxQueuesPerTopic { // whether or not the topic exists
		return fmt.Errorf("%w: adding %d queues: not in 1..%d", ErrInvalidArgument, n, MaxQueuesPerTopic)
	}
	if err := validateTopicName(name, true); err != nil { // whether or not the topic exists
		return err
	}
	e.adminMu.Lock()
	defer e.adminMu.Unlock()
	t, ok := e.lookupTopic(name)
	if !ok {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	old := t.queueList()
	// In the caller's terms: queues (of lanes lanes each), not queue IDs.
	lanes := t.laneCount()
	if n < 1 || n > MaxQueuesPerTopic || len(old)+n*lanes > MaxQueuesPerTopic { // n first: the product could wrap
		return fmt.Errorf("%w: adding %d queues to %d exceeds 1..%d%s", ErrInvalidArgument, n, len(old)/lanes, MaxQueuesPerTopic/lanes, lanesNote(lanes))
	}
	n *= lanes // a queue brings all its lanes
	m := t.meta()
	m.Queues += n
	op, err := topicOp(m)
	if err != nil {
		return err
	}
	// The groups consuming the topic start the new queues at their first
	// message, in the same write (see startsOfAddedQueues).
	starts, sets := e.groups.startsOfAddedQueues(name, len(old), len(old)+n)
	applied, err := e.storeMeta(append([]store.MetaOp{op}, starts...)...)
	if !applied {
		return fmt.Errorf("equeue: add queues to %q: %w", name, err)
	}
	qs := slices.Clone(old)
	for i := 0; i < n; i++ {
		qs = append(qs, newQueue(t, len(old)+i, 0, 0))
	}
	t.queues.Store(&qs)
	for g, ss := range sets { // before the rebalance grants the queues
		g.mu.Lock()
		for _, s := range ss {
			if _, ok := g.offsets[s.k]; !ok { // none is stored before the queue exists
				g.setOffset(s.k, s.off, nil)
			}
		}
		g.mu.Unlock()
	}
	e.log.Info("queues added", "topic", name, "queues", len(qs))
	e.notifyTopicChange(name)
	return notDurable(err, "add queues to %q", name)
}

// SetQueueWritable opens or closes one queue to producers. A closed queue
// keeps its messages and is still consumed, so it can be drained before it
// is retired: once a close returned, no send lands in the queue any more
// (one that checked it open before is refused by the writer with
// ErrQueueNotWritable, or stored before the close returns).
func (e *Engine) SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := validateTopicName(name, true); err != nil { // whether or not the topic exists
		return err
	}
	e.adminMu.Lock()
	defer e.adminMu.Unlock()
	t, ok := e.lookupTopic(name)
	if !ok {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	q, err := t.queue(queueID)
	if err != nil {
		return err
	}
	m := t.meta()
	m.ReadOnly = slices.DeleteFunc(m.ReadOnly, func(id int) bool { return id == queueID })
	if !writable {
		m.ReadOnly = append(m.ReadOnly, queueID)
		slices.Sort(m.ReadOnly)
	}
	applied, err := e.saveTopicMeta(m)
	if !applied {
		return fmt.Errorf("equeue: set queue %s/%d writable=%v: %w", name, queueID, writable, err)
	}
	q.writable.Store(writable)
	if !writable {
		e.settleClosedQueue(ctx, q)
	}
	return notDurable(err, "set queue %s/%d writable=%v", name, queueID, writable)
}

// settleClosedQueue waits for the sends to q the writer took before it was
// closed: the writer refuses those after (apply), so once this returns the
// queue's end no longer moves but for due delayed messages. The close is
// stored already, so the caller's context no longer cuts this short.
func (e *Engine) settleClosedQueue(ctx context.Context, q *queue) {
	if err := e.barrier(context.WithoutCancel(ctx)); err != nil {
		e.log.Warn("waiting for sends to a closed queue", "topic", q.topic.name, "queue", q.id, "err", err)
	}
}

// DeleteTopic deletes a topic, all its messages and every group's committed
// offsets of it. The topic's metadata, low watermarks and offsets go in one
// store write; if that write fails, the topic and its offsets are left as
// they were and the error says so. Copies of its messages that groups sent
// back are messages of their retry topics and dead letters: they stay,
// but the groups' pulls skip the retry copies (counted apart, in
// PullResult.DeletedTopicRetries and Stats().DeletedTopicRetries, not as
// expired messages) rather than deliver a message of a deleted topic,
// also once a topic is made again under the name (retryorigin.go); the
// dead letters are listed with the deleted topic as their origin.
//
// Deleting a group's %RETRY% or %DLQ% topic is ordered with the group's
// deletion and its redrives as DeleteGroup is (groupdelete_gate.go): it
// waits for a redrive's send under way, and deletes its redriven mark
// with the topic; the redrive's next send then stops with
// ErrTopicNotFound. A ctx that ends during that wait ends it: the topic
// is left as it was, and the context's error is returned.
func (e *Engine) DeleteTopic(ctx context.Context, name string) error {
	if group, ok := groupOfTopic(name); ok && ValidateName(group) == nil {
		if err := e.enter(ctx); err != nil {
			return err
		}
		defer e.leave()
		unfence, err := e.fenceGroupName(ctx, group)
		if err != nil {
			return fmt.Errorf("equeue: delete topic %q: %w", name, err)
		}
		defer unfence()
	}
	return e.deleteTopic(ctx, name, nil)
}

// groupOfTopic returns the group whose retry or dead-letter topic name is.
func groupOfTopic(name string) (string, bool) {
	if group, ok := cutDLQTopic(name); ok {
		return group, true
	}
	return strings.CutPrefix(name, RetryTopicPrefix)
}

// errOtherIncarnation is returned by deleteTopic when the topic of the name
// is not the one the caller named.
var errOtherIncarnation = errors.New("equeue: the topic was deleted and made again")

// deleteTopic is DeleteTopic; with only set, it deletes the topic only if
// it is still only, and returns errOtherIncarnation if a topic of the same
// name was made since only was deleted.
func (e *Engine) deleteTopic(ctx context.Context, name string, only *topic) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	if err := validateTopicName(name, true); err != nil { // whether or not the topic exists
		return err
	}
	e.adminMu.Lock()
	defer e.adminMu.Unlock()
	t, ok := e.lookupTopic(name)
	if !ok {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	if only != nil && t != only {
		return errOtherIncarnation
	}
	applied, err := e.dropTopicMeta(t)
	if !applied {
		return fmt.Errorf("equeue: delete topic %q: %w", name, err)
	}
	e.sched.topicDeleted(t.id) // its parked delayed messages go with it
	// Appends queued before the topic was marked deleted may still be
	// written: wait for them, so the drop below removes them too. The
	// topic is gone from the store already, so the caller's context no
	// longer cuts this short.
	if err := e.barrier(context.WithoutCancel(ctx)); err != nil {
		e.log.Warn("waiting for appends to a deleted topic", "topic", name, "err", err)
	}
	if derr := e.dropQueues(t.id, len(t.queueList()), e.writeMeta); derr != nil {
		e.log.Warn("dropping the records of a deleted topic; the next open retries", "topic", name, "err", derr)
	}
	e.reclaimPending.Store(true) // the next retention pass gives the space back
	for _, q := range t.queueList() {
		q.release()
	}
	e.log.Info("topic deleted", "topic", name)
	e.notifyTopicChange(name)
	return notDurable(err, "delete topic %q", name)
}

// dropTopicMeta removes t's metadata, watermarks, lost ranges, what
// retention owed of its queues (owedKey) and committed offsets in one
// store write and then, only if it reached the store, removes t from
// memory (see storeMeta for applied) and deletes the groups' send-back
// marks of its messages (deleteMarksOf), the members' pull marks of its
// queues (pullMarks.forgetTopic) and, of a dead-letter topic, the
// redriven marks of its dead letters. No offset
// commit of t runs meanwhile (t.gate) and none is accepted after.
func (e *Engine) dropTopicMeta(t *topic) (applied bool, err error) {
	t.retain.mu.Lock()
	defer t.retain.mu.Unlock()
	t.gate.Lock()
	defer t.gate.Unlock()
	ops := []store.MetaOp{{Key: topicKey(t.name), Delete: true}}
	for _, q := range t.queueList() {
		ops = append(ops, store.MetaOp{Key: watermarkKey(q.key), Delete: true})
	}
	ops = append(ops, lostDeletes(t)...)
	ops = append(ops, owedDeletes(t)...)
	ops = append(ops, store.MetaOp{Key: dropKey(t.id), Value: binary.BigEndian.AppendUint32(nil, uint32(len(t.queueList())))})
	offs, err := e.groups.offsetKeysOf(t.name)
	if err != nil {
		return false, err
	}
	for _, k := range offs {
		ops = append(ops, store.MetaOp{Key: k, Delete: true})
	}
	if applied, err = e.storeMeta(ops...); !applied {
		return false, err
	}
	e.mu.Lock()
	delete(e.topics, t.name)
	delete(e.topicIDs, t.id)
	e.topicsVersion.Add(1)
	e.mu.Unlock()
	e.forgetLastTopic(t)
	t.deleted.Store(true)
	e.groups.forgetOffsets(t.name)
	e.deleteMarksOf(t.name)
	e.marks.forgetTopic(t.name)
	e.deleteRedrivenMarksOf(t)
	return true, err
}

// dropQueues deletes the records of the n queues of deleted topic id, then
// its drop mark with write.
func (e *Engine) dropQueues(id uint32, n int, write func(...store.MetaOp) error) error {
	var errs []error
	for i := 0; i < n; i++ {
		if err := e.st.DropQueue(store.QueueID{Topic: id, Queue: uint32(i)}); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return write(store.MetaOp{Key: dropKey(id), Delete: true})
}

// finishDrops drops the records of topics deleted before a crash or a
// failed drop. It runs in Open, before the writer starts.
func (e *Engine) finishDrops() {
	type drop struct {
		id uint32
		n  int
	}
	var drops []drop
	err := e.st.ScanMeta(keyDropPrefix, func(k, v []byte) error {
		if len(k) == len(keyDropPrefix)+4 && len(v) == 4 {
			drops = append(drops, drop{binary.BigEndian.Uint32(k[len(keyDropPrefix):]), int(binary.BigEndian.Uint32(v))})
		}
		return nil
	})
	if err != nil {
		e.log.Warn("listing deleted topics to drop", "err", err)
		return
	}
	direct := func(ops ...store.MetaOp) error { return e.st.Write(&store.Batch{Meta: ops}) }
	for _, d := range drops {
		if err := e.dropQueues(d.id, d.n, direct); err != nil {
			e.log.Warn("dropping the records of a deleted topic", "topic_id", d.id, "err", err)
		}
	}
}

// Topic describes one topic. A name no topic can have gets
// ErrInvalidName, an unknown topic ErrTopicNotFound.
func (e *Engine) Topic(ctx context.Context, name string) (TopicInfo, error) {
	if err := e.enter(ctx); err != nil {
		return TopicInfo{}, err
	}
	defer e.leave()
	if err := validateTopicName(name, true); err != nil { // whether or not the topic exists
		return TopicInfo{}, err
	}
	t, ok := e.lookupTopic(name)
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	return t.info(), nil
}

// Topics lists every topic, sorted by name, with each queue's offsets.
func (e *Engine) Topics(ctx context.Context) ([]TopicInfo, error) {
	return e.listTopics(ctx, nil)
}

// listTopics lists the topics whose name keep accepts (every one when
// keep is nil), sorted by name: only those are described.
func (e *Engine) listTopics(ctx context.Context, keep func(name string) bool) ([]TopicInfo, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
	e.mu.RLock()
	var out []TopicInfo
	if keep == nil {
		out = make([]TopicInfo, 0, len(e.topics))
	}
	for name, t := range e.topics {
		if keep == nil || keep(name) {
			out = append(out, t.info())
		}
	}
	e.mu.RUnlock()
	slices.SortFunc(out, func(a, b TopicInfo) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// topicFor returns the topic, creating it when auto-create allows.
func (e *Engine) topicFor(ctx context.Context, name string) (*topic, error) {
	if t, ok := e.lookupTopic(name); ok {
		return t, nil
	}
	internal := isInternalTopic(name) && internalAllowed(ctx, name) // only the engine creates them (sendback.go)
	// Only Route creates reply topics (request.go).
	if isReplyTopic(name) {
		return nil, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	if !e.opts.AutoCreateTopics && !internal {
		if err := validateTopicName(name, false); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	queues := 0
	if internal {
		queues = 1
	}
	if err := e.createTopic(ctx, name, TopicOptions{Queues: queues}, internal); err != nil && !errors.Is(err, ErrTopicExists) {
		return nil, err
	}
	t, ok := e.lookupTopic(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	return t, nil
}

// storeMeta writes ops with writeMeta and reports whether they are in the
// store: applied is true when the write succeeded, and when it was written
// but its fsync failed (an error matching ErrIndeterminate); any other error
// means nothing was written. The writer knows which, so this is not guessed
// by reading an op back: a failed write whose op happened to hold already
// would read as stored. The caller changes memory exactly when applied is
// true, so memory always matches the store, and returns err (see
// notDurable) so the caller learns the outcome is not known durable.
func (e *Engine) storeMeta(ops ...store.MetaOp) (applied bool, err error) {
	err = e.writeMeta(ops...)
	return err == nil || errors.Is(err, ErrIndeterminate), err
}

// notDurable wraps the error of a change that reached the store and the
// engine's memory but may not be durable; nil stays nil.
func notDurable(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("equeue: %s: written and applied, but not known durable: %w", fmt.Sprintf(format, args...), err)
}

// checkLookupNames returns an error matching ErrInvalidName when topic is
// no name a topic can have (a user's, or one of the engine's %RETRY%,
// %DLQ% and %REPLY% names) or group, when given, is no group name: a call
// that looks them up answers so whether or not they exist.
func checkLookupNames(topic, group string) error {
	if err := validateTopicName(topic, true); err != nil {
		return err
	}
	if group == "" {
		return nil
	}
	return ValidateName(group)
}
