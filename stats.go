package equeue

import (
	"cmp"
	"slices"
	"strings"
	"time"
)

// QueueStats are the counters of one queue since the engine opened.
type QueueStats struct {
	// Topic is the topic name.
	Topic string
	// Queue is the queue number.
	Queue int
	// Appended counts messages appended: those reported stored, counted
	// when their write completes. A write of unknown outcome (a failed
	// fsync: ErrIndeterminate) counts neither here nor in AppendedBytes.
	Appended uint64
	// AppendedBytes is the encoded size of the messages Appended counts.
	AppendedBytes uint64
	// MinOffset is the lowest offset still stored.
	MinOffset int64
	// MaxOffset is one past the last message.
	MaxOffset int64
	// SentBack counts the failed messages consumers' send-backs stored for
	// the queue (of a retry or dead-letter topic), when each was stored: a
	// retry due later counts at once, though it is appended (and counted in
	// Appended) only when due.
	SentBack uint64
}

// QueueStats returns the counters of every queue (retry and dead-letter
// topics included), sorted by topic and queue. SentBack of %RETRY%<group>
// counts the group's retries; of %DLQ%<group>, its dead letters.
func (e *Engine) QueueStats() []QueueStats {
	e.mu.RLock()
	out := make([]QueueStats, 0, len(e.topics))
	for _, t := range e.topics {
		for _, q := range t.queueList() {
			min, next, _ := q.bounds()
			out = append(out, QueueStats{Topic: t.name, Queue: q.id, Appended: q.appended.Load(), AppendedBytes: q.appendedBytes.Load(), MinOffset: min, MaxOffset: next, SentBack: q.sentBack.Load()})
		}
	}
	e.mu.RUnlock()
	slices.SortFunc(out, func(a, b QueueStats) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return cmp.Compare(a.Queue, b.Queue)
	})
	return out
}

// Observer receives engine events for metrics. Methods must be fast and
// safe for concurrent use.
type Observer interface {
	// ObservePull is called after each pull with its duration (long-poll
	// wait included) and the number of messages returned.
	ObservePull(topic string, queue int, took time.Duration, messages int)
}
