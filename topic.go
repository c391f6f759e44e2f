package equeue

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
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
// characters of [A-Za-z0-9._-].
func ValidateName(s string) error {
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
		for _, p := range []string{RetryTopicPrefix, DLQTopicPrefix} {
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
	// dedup is the window in which a producer-supplied message ID is stored
	// only once; zero disables deduplication.
	dedup time.Duration
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
}

func (t *topic) meta() topicMeta {
	m := topicMeta{Name: t.name, ID: t.id, CreatedAt: t.created, Dedup: t.dedup}
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
)

func topicKey(name string) []byte { return append(slices.Clone(keyTopicPrefix), name...) }

func watermarkKey(q store.QueueID) []byte {
	k := slices.Clone(keyWatermark)
	k = binary.BigEndian.AppendUint32(k, q.Topic)
	return binary.BigEndian.AppendUint32(k, q.Queue)
}

// QueueInfo describes one queue.
type QueueInfo struct {
	ID int
	// MinOffset is the lowest offset still stored.
	MinOffset int64
	// MaxOffset is one past the last stored offset: the offset the next message gets.
	MaxOffset int64
	// Writable is false once the queue is closed to producers.
	Writable bool
}

// TopicInfo describes one topic.
type TopicInfo struct {
	Name      string
	CreatedAt time.Time
	Queues    []QueueInfo
}

func (t *topic) info() TopicInfo {
	ti := TopicInfo{Name: t.name, CreatedAt: t.created}
	for _, q := range t.queueList() {
		min, next, _ := q.bounds()
		ti.Queues = append(ti.Queues, QueueInfo{ID: q.id, MinOffset: min, MaxOffset: next, Writable: q.writable.Load()})
	}
	return ti
}

// loadTopics restores every topic and each queue's bounds from the store.
func (e *Engine) loadTopics() error {
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
		t := &topic{name: m.Name, id: m.ID, created: m.CreatedAt, dedup: m.Dedup}
		qs := make([]*queue, 0, m.Queues)
		for i := 0; i < m.Queues; i++ {
			key := store.QueueID{Topic: m.ID, Queue: uint32(i)}
			first, next, ok, err := e.st.Bounds(key)
			if err != nil {
				return fmt.Errorf("equeue: bounds of %s/%d: %w", m.Name, i, err)
			}
			wm, err := e.loadWatermark(key)
			if err != nil {
				return err
			}
			if !ok {
				first, next = wm, wm
			}
			qs = append(qs, newQueue(t, i, int64(max(first, wm)), int64(max(next, wm))))
		}
		for _, id := range m.ReadOnly {
			if id >= 0 && id < len(qs) {
				qs[id].writable.Store(false)
			}
		}
		t.queues.Store(&qs)
		e.topics[t.name] = t
	}
	return nil
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

func (e *Engine) saveTopic(t *topic) error {
	v, err := json.Marshal(t.meta())
	if err != nil {
		return err
	}
	return e.writeMeta(store.MetaOp{Key: topicKey(t.name), Value: v})
}

// writeMeta writes metadata and makes it durable under the engine's policy.
func (e *Engine) writeMeta(ops ...store.MetaOp) error {
	if err := e.st.Write(&store.Batch{Meta: ops}); err != nil {
		return err
	}
	if e.opts.Sync.kind == syncAlways {
		return e.st.Sync()
	}
	return nil
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
	// in this topic within the window is acknowledged with the original
	// queue and offsets and stores nothing again.
	DedupWindow time.Duration
}

// CreateTopicWith creates a topic with options.
func (e *Engine) CreateTopicWith(ctx context.Context, name string, o TopicOptions) error {
	if o.DedupWindow < 0 {
		return fmt.Errorf("%w: negative dedup window", ErrInvalidArgument)
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
	if queues < 1 || queues > MaxQueuesPerTopic {
		return fmt.Errorf("%w: queue count %d not in 1..%d", ErrInvalidArgument, queues, MaxQueuesPerTopic)
	}
	e.adminMu.Lock()
	defer e.adminMu.Unlock()
	if _, ok := e.lookupTopic(name); ok {
		return fmt.Errorf("%w: %q", ErrTopicExists, name)
	}
	id, err := e.nextTopicID()
	if err != nil {
		return err
	}
	t := &topic{name: name, id: id, created: time.Now().UTC().Truncate(time.Millisecond), dedup: o.DedupWindow}
	qs := make([]*queue, queues)
	for i := range qs {
		qs[i] = newQueue(t, i, 0, 0)
	}
	t.queues.Store(&qs)
	if err := e.saveTopic(t); err != nil {
		return fmt.Errorf("equeue: create topic %q: %w", name, err)
	}
	e.mu.Lock()
	e.topics[name] = t
	e.mu.Unlock()
	e.log.Info("topic created", "topic", name, "queues", queues)
	e.notifyTopicChange(name)
	return nil
}

func (e *Engine) nextTopicID() (uint32, error) {
	var id uint32
	v, err := e.st.GetMeta(keyTopicSeq)
	switch {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return 0, err
	case len(v) == 4:
		id = binary.BigEndian.Uint32(v)
	default:
		return 0, fmt.Errorf("%w: topic sequence", ErrCorrupt)
	}
	id++
	if err := e.writeMeta(store.MetaOp{Key: keyTopicSeq, Value: binary.BigEndian.AppendUint32(nil, id)}); err != nil {
		return 0, err
	}
	return id, nil
}

// AddQueues adds n queues to a live topic. Producers see them on their next
// route refresh; consumer groups rebalance at once.
func (e *Engine) AddQueues(ctx context.Context, name string, n int) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	e.adminMu.Lock()
	defer e.adminMu.Unlock()
	t, ok := e.lookupTopic(name)
	if !ok {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	old := t.queueList()
	if n < 1 || len(old)+n > MaxQueuesPerTopic {
		return fmt.Errorf("%w: adding %d queues to %d exceeds 1..%d", ErrInvalidArgument, n, len(old), MaxQueuesPerTopic)
	}
	qs := slices.Clone(old)
	for i := 0; i < n; i++ {
		qs = append(qs, newQueue(t, len(old)+i, 0, 0))
	}
	t.queues.Store(&qs)
	if err := e.saveTopic(t); err != nil {
		t.queues.Store(&old)
		return fmt.Errorf("equeue: add queues to %q: %w", name, err)
	}
	e.log.Info("queues added", "topic", name, "queues", len(qs))
	e.notifyTopicChange(name)
	return nil
}

// SetQueueWritable opens or closes one queue to producers. A closed queue
// keeps its messages and is still consumed, so it can be drained before it
// is retired.
func (e *Engine) SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
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
	prev := q.writable.Swap(writable)
	if err := e.saveTopic(t); err != nil {
		q.writable.Store(prev)
		return err
	}
	return nil
}

// DeleteTopic deletes a topic and all its messages.
func (e *Engine) DeleteTopic(ctx context.Context, name string) error {
	if err := e.enter(ctx); err != nil {
		return err
	}
	defer e.leave()
	e.adminMu.Lock()
	defer e.adminMu.Unlock()
	t, ok := e.lookupTopic(name)
	if !ok {
		return fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	e.mu.Lock()
	delete(e.topics, name)
	e.mu.Unlock()
	t.deleted.Store(true)
	// Let appends already queued for this topic reach the store first, so
	// nothing is written after the drop.
	if err := e.barrier(ctx); err != nil {
		return err
	}
	ops := []store.MetaOp{{Key: topicKey(name), Delete: true}}
	for _, q := range t.queueList() {
		ops = append(ops, store.MetaOp{Key: watermarkKey(q.key), Delete: true})
	}
	if err := e.writeMeta(ops...); err != nil {
		return fmt.Errorf("equeue: delete topic %q: %w", name, err)
	}
	for _, q := range t.queueList() {
		if err := e.st.DropQueue(q.key); err != nil {
			e.log.Warn("dropping queue of deleted topic", "topic", name, "queue", q.id, "err", err)
		}
		q.release()
	}
	e.log.Info("topic deleted", "topic", name)
	e.notifyTopicChange(name)
	return nil
}

// Topic describes one topic.
func (e *Engine) Topic(ctx context.Context, name string) (TopicInfo, error) {
	if err := e.enter(ctx); err != nil {
		return TopicInfo{}, err
	}
	defer e.leave()
	t, ok := e.lookupTopic(name)
	if !ok {
		return TopicInfo{}, fmt.Errorf("%w: %q", ErrTopicNotFound, name)
	}
	return t.info(), nil
}

// Topics lists every topic, sorted by name, with each queue's offsets.
func (e *Engine) Topics(ctx context.Context) ([]TopicInfo, error) {
	if err := e.enter(ctx); err != nil {
		return nil, err
	}
	defer e.leave()
	e.mu.RLock()
	out := make([]TopicInfo, 0, len(e.topics))
	for _, t := range e.topics {
		out = append(out, t.info())
	}
	e.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (e *Engine) lookupTopic(name string) (*topic, bool) {
	e.mu.RLock()
	t, ok := e.topics[name]
	e.mu.RUnlock()
	return t, ok
}

// topicFor returns the topic, creating it when auto-create allows.
func (e *Engine) topicFor(ctx context.Context, name string) (*topic, error) {
	if t, ok := e.lookupTopic(name); ok {
		return t, nil
	}
	internal := isInternalTopic(name) && internalAllowed(ctx, name) // only the engine creates them (sendback.go)
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
