package kafka

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/equeue-go/equeue"
)

// maxTimestampBudget bounds the time one ListOffsets request spends
// reading partitions through for MAX_TIMESTAMP, well under the clients'
// request timeouts (10 s for franz-go, 30 s for the Java client). Each
// partition asked gets at least one pull (at most equeue.MaxPullBatch
// messages and one store read budget, a few MiB), so that every one goes
// on. Tests set another.
var maxTimestampBudget = 3 * time.Second

// maxTimestampSweep is the least number of topics kept at which the
// listener looks for topics deleted other than through it (see sweep).
// Tests set another.
var maxTimestampSweep = 64

// maxTimestamps keeps, for each queue asked for MAX_TIMESTAMP, what its
// scans learned, so that a queue's messages are read once, not on every
// request: a later request reads only the messages stored since. A
// topic's scans are forgotten when it is deleted through the listener, or
// found deleted by a request or a sweep.
type maxTimestamps struct {
	mu     sync.Mutex
	topics map[string]map[int]*maxTimestampScan // topic -> queue -> scan
	// sweepAt is the number of topics at which the next sweep runs.
	sweepAt int
}

// maxTimestampScan is what the scans of one queue learned. mu is held
// while a request scans, so requests for one queue scan one at a time and
// each goes on from where the last one stopped.
type maxTimestampScan struct {
	mu    sync.Mutex
	topic [16]byte // the topic's Kafka ID (topicID): a topic created again starts over
	next  int64    // the offset the scan reads next
	// best and bestTS are the offset and timestamp of the first message
	// with the largest timestamp of those read; -1 when none was.
	best, bestTS int64
}

func newMaxTimestamps() *maxTimestamps {
	return &maxTimestamps{topics: map[string]map[int]*maxTimestampScan{}, sweepAt: maxTimestampSweep}
}

// scan returns the scan of a queue, locked.
func (m *maxTimestamps) scan(topic string, queue int) *maxTimestampScan {
	m.mu.Lock()
	qs := m.topics[topic]
	if qs == nil {
		qs = map[int]*maxTimestampScan{}
		m.topics[topic] = qs
	}
	sc := qs[queue]
	if sc == nil {
		sc = &maxTimestampScan{next: -1, best: -1, bestTS: -1}
		qs[queue] = sc
	}
	m.mu.Unlock()
	sc.mu.Lock()
	return sc
}

// forget drops what the scans of a topic learned.
func (m *maxTimestamps) forget(topic string) {
	m.mu.Lock()
	delete(m.topics, topic)
	m.mu.Unlock()
}

// sweep forgets the topics deleted other than through the listener (in
// the engine, over gRPC) and never asked for again, and the queues a topic
// created again with fewer no longer has. It looks them up only when the
// topics kept have reached sweepAt, which it then sets to twice the
// topics left: the lookups are paid for by the topics added between two
// sweeps.
func (m *maxTimestamps) sweep(ctx context.Context, b Broker) {
	m.mu.Lock()
	if len(m.topics) < m.sweepAt {
		m.mu.Unlock()
		return
	}
	names := make([]string, 0, len(m.topics))
	for name := range m.topics {
		names = append(names, name)
	}
	m.sweepAt = 2 * len(names) // no other request sweeps meanwhile
	m.mu.Unlock()
	for _, name := range names {
		ti, err := b.Topic(ctx, name)
		switch {
		case errors.Is(err, equeue.ErrTopicNotFound):
			m.forget(name)
		case err == nil:
			m.mu.Lock()
			for q := range m.topics[name] {
				if q >= len(ti.Queues) {
					delete(m.topics[name], q)
				}
			}
			m.mu.Unlock()
		}
	}
	m.mu.Lock()
	m.sweepAt = max(maxTimestampSweep, 2*len(m.topics))
	m.mu.Unlock()
}

// restart makes the scan read the queue again from its first message.
func (sc *maxTimestampScan) restart(tid [16]byte, from int64) {
	sc.topic, sc.next, sc.best, sc.bestTS = tid, from, -1, -1
}

// lastLiveMessage returns the queue's last message that pulls still
// return, nil when none is: the last ones may have expired (TTL) or be
// a lost range, which pulls skip. It reads back from the queue's end a
// window of equeue.MaxPullBatch offsets at a time, each read forward,
// until deadline (and at least one pull): one that has not found it by
// then is answered OFFSET_NOT_AVAILABLE, which is retriable.
func (c *conn) lastLiveMessage(topic string, q equeue.QueueInfo, deadline time.Time) (*equeue.Message, int16) {
	pulls := 0
	for end := q.MaxOffset; end > q.MinOffset; {
		from := max(q.MinOffset, end-equeue.MaxPullBatch)
		var last *equeue.Message
		for off := from; off < end; pulls++ {
			if pulls > 0 && !time.Now().Before(deadline) {
				return nil, errOffsetNotAvailable
			}
			res, err := c.s.b.Pull(c.ctx, &equeue.PullRequest{Topic: topic, Queue: q.ID, Offset: off, Max: equeue.MaxPullBatch})
			if err != nil {
				return nil, errorCode(err)
			}
			for _, m := range res.Messages {
				if m.Offset < end {
					last = m
				}
			}
			if res.NextOffset <= off {
				break
			}
			off = res.NextOffset
		}
		if last != nil {
			return last, errNone
		}
		end = from
	}
	return nil, errNone
}

// maxTimestampOffset answers MAX_TIMESTAMP (KIP-734) in one queue of the
// topic of Kafka ID tid: the offset and timestamp of the message with
// the largest timestamp, the first of them when several share it, as
// Kafka does; offset and timestamp -1 in an empty queue. With
// LogAppendTime the timestamps are the times the engine stored the
// messages, which grow with the offset: that is the first message stored
// in the millisecond of the last one pulls still return (lastLiveMessage:
// the last ones may have expired or be lost), found by the search offsetFor makes by
// time. Otherwise they are the producers' (BornAt), in no order, and the
// engine keeps no index of them (Kafka keeps the largest of each log
// segment): the queue's messages are read through, once, and what was
// learned kept for the next request, which reads only the messages stored
// since. Retention deleting the message found, or the topic being deleted
// and created again, makes the next request read the queue through again.
// A request reads until deadline (and at least one pull): one that has not
// read to the end by then is answered OFFSET_NOT_AVAILABLE, which is
// retriable, and the next request goes on from there.
func (c *conn) maxTimestampOffset(topic string, tid [16]byte, q equeue.QueueInfo, deadline time.Time) (int64, int64, int16) {
	if q.MaxOffset == q.MinOffset {
		return -1, -1, errNone
	}
	if c.s.o.LogAppendTime {
		last, code := c.lastLiveMessage(topic, q, deadline)
		if code != errNone || last == nil {
			return -1, -1, code
		}
		return c.offsetFor(topic, tid, q, last.StoredAt.UnixMilli(), deadline)
	}
	c.s.maxTS.sweep(c.ctx, c.s.b)
	sc := c.s.maxTS.scan(topic, q.ID)
	defer sc.mu.Unlock()
	if sc.topic != tid || sc.next < q.MinOffset || (sc.best >= 0 && sc.best < q.MinOffset) {
		// A new topic, or messages the scan read (perhaps the one it
		// found) deleted since: read the queue again. (A scan past
		// q.MaxOffset went on under a request that saw the queue later.)
		sc.restart(tid, q.MinOffset)
	}
	for pulls := 0; sc.next < q.MaxOffset; pulls++ {
		if pulls > 0 && !time.Now().Before(deadline) {
			return -1, -1, errOffsetNotAvailable
		}
		res, err := c.s.b.Pull(c.ctx, &equeue.PullRequest{Topic: topic, Queue: q.ID, Offset: sc.next, Max: equeue.MaxPullBatch})
		if err != nil {
			return -1, -1, errorCode(err)
		}
		for _, m := range res.Messages {
			if ts := c.timestampOf(m); sc.best < 0 || ts > sc.bestTS {
				sc.best, sc.bestTS = m.Offset, ts
			}
		}
		if res.NextOffset <= sc.next {
			break
		}
		sc.next = res.NextOffset
	}
	return sc.best, sc.bestTS, errNone
}
