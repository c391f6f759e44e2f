package kafka

import (
	"sync"
	"time"

	"github.com/equeue-go/equeue"
)

// maxTimestampPulls bounds the pulls (each at most equeue.MaxPullBatch
// messages and one store read budget, a few MiB) one ListOffsets request
// makes for MAX_TIMESTAMP in one queue. Tests set another.
var maxTimestampPulls = 32

// maxTimestamps keeps, for each queue asked for MAX_TIMESTAMP, what its
// scans learned, so that a queue's messages are read once, not on every
// request: a later request reads only the messages stored since.
type maxTimestamps struct {
	mu sync.Mutex
	qs map[equeue.QueueRef]*maxTimestampScan
}

// maxTimestampScan is what the scans of one queue learned. mu is held
// while a request scans, so requests for one queue scan one at a time and
// each goes on from where the last one stopped.
type maxTimestampScan struct {
	mu      sync.Mutex
	created time.Time // the topic's CreatedAt: a topic created again starts over
	next    int64     // the offset the scan reads next
	// best and bestTS are the offset and timestamp of the first message
	// with the largest timestamp of those read; -1 when none was.
	best, bestTS int64
}

func newMaxTimestamps() *maxTimestamps {
	return &maxTimestamps{qs: map[equeue.QueueRef]*maxTimestampScan{}}
}

// scan returns the scan of a queue, locked.
func (m *maxTimestamps) scan(topic string, queue int) *maxTimestampScan {
	k := equeue.QueueRef{Topic: topic, Queue: queue}
	m.mu.Lock()
	sc := m.qs[k]
	if sc == nil {
		sc = &maxTimestampScan{next: -1, best: -1, bestTS: -1}
		m.qs[k] = sc
	}
	m.mu.Unlock()
	sc.mu.Lock()
	return sc
}

// maxTimestampOffset answers MAX_TIMESTAMP (KIP-734) in one queue of a
// topic created at created: the offset and timestamp of the message with
// the largest timestamp, the first of them when several share it, as
// Kafka does; offset and timestamp -1 in an empty queue. With
// LogAppendTime the timestamps are the times the engine stored the
// messages, which grow with the offset: that is the first message stored
// in the last one's millisecond, found by the search offsetFor makes by
// time. Otherwise they are the producers' (BornAt), in no order, and the
// engine keeps no index of them (Kafka keeps the largest of each log
// segment): the queue's messages are read through, once, and what was
// learned kept for the next request, which reads only the messages stored
// since. Retention deleting the message found makes the next request read
// the queue through again. A request reads at most maxTimestampPulls pulls:
// one that has not read to the end is answered OFFSET_NOT_AVAILABLE, which
// clients retry, and the next request goes on from there.
func (c *conn) maxTimestampOffset(topic string, created time.Time, q equeue.QueueInfo) (int64, int64, int16) {
	if q.MaxOffset == q.MinOffset {
		return -1, -1, errNone
	}
	if c.s.o.LogAppendTime {
		last, err := c.messageAt(topic, q.ID, q.MaxOffset-1)
		if err != nil || last == nil {
			return -1, -1, errorCode(err)
		}
		return c.offsetFor(topic, created, q, last.StoredAt.UnixMilli())
	}
	sc := c.s.maxTS.scan(topic, q.ID)
	defer sc.mu.Unlock()
	if !sc.created.Equal(created) || sc.next < q.MinOffset || (sc.best >= 0 && sc.best < q.MinOffset) {
		// A new topic, or messages the scan read (perhaps the one it
		// found) deleted since: read the queue again. (A scan past
		// q.MaxOffset went on under a request that saw the queue later.)
		sc.created, sc.next, sc.best, sc.bestTS = created, q.MinOffset, -1, -1
	}
	for pulls := 0; sc.next < q.MaxOffset; pulls++ {
		if pulls == maxTimestampPulls {
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
