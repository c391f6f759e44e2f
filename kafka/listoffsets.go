package kafka

import (
	"errors"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// ListOffsets special timestamps.
const (
	latestTimestamp   = -1
	earliestTimestamp = -2
	maxTimestamp      = -3
)

// listOffsets answers each partition from what it reads of that
// partition alone (queueInfo): a topic's description reads every
// partition of it, so a client asking for the partitions one at a time
// would cost the square of their count. MAX_TIMESTAMP, which reads the
// partition's records anyway, describes the topic (once a request) for
// its ID, which keys what the scans learned.
func (c *conn) listOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := kmsg.NewPtrListOffsetsResponse()
	deadline := time.Now().Add(maxTimestampBudget) // of the MAX_TIMESTAMP scans
	topics := map[string]described{}               // for MAX_TIMESTAMP
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Timestamp, rp.Offset = p.Partition, -1, -1
			var (
				q   equeue.QueueInfo
				tid [16]byte
				err error
			)
			switch {
			case hidden(t.Topic):
				err = equeue.ErrTopicNotFound
			case p.Timestamp == maxTimestamp:
				d, ok := topics[t.Topic]
				if !ok {
					d.ti, d.err = c.s.b.Topic(c.ctx, t.Topic)
					topics[t.Topic] = d
				}
				q, tid, err = d.partition(p.Partition)
			default:
				q, err = c.queueInfo(t.Topic, p.Partition)
			}
			if errors.Is(err, equeue.ErrInvalidName) {
				// Kafka's ListOffsets does not check names: a topic it does
				// not have is UNKNOWN_TOPIC_OR_PARTITION, whatever its name.
				err = equeue.ErrTopicNotFound
			}
			if errors.Is(err, equeue.ErrTopicNotFound) {
				c.s.maxTS.forget(t.Topic) // deleted other than through the listener
			}
			if err != nil {
				rp.ErrorCode = errorCode(err)
			} else {
				rp.Offset, rp.Timestamp, rp.ErrorCode = c.offsetFor(t.Topic, tid, q, p.Timestamp, deadline)
			}
			if req.GetVersion() == 0 && rp.Offset >= 0 {
				rp.OldStyleOffsets = []int64{rp.Offset}
			}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// described is a topic's description as a request read it, or why it
// could not.
type described struct {
	ti  equeue.TopicInfo
	err error
}

// partition is the description of partition part and the topic's Kafka
// ID (topicID).
func (d described) partition(part int32) (equeue.QueueInfo, [16]byte, error) {
	switch {
	case d.err != nil:
		return equeue.QueueInfo{}, [16]byte{}, d.err
	case part < 0 || int(part) >= len(d.ti.Queues):
		return equeue.QueueInfo{}, [16]byte{}, equeue.ErrQueueNotFound
	}
	return d.ti.Queues[part], topicID(d.ti), nil
}

// offsetFor resolves a ListOffsets timestamp in one queue: the end, the
// low watermark, the message with the largest timestamp (read until
// deadline, see maxTimestampOffset), or the first
// message stored at or after a time (by the time the engine stored it, which grows with the offset).
// When no message was stored at or after the time (an empty queue, a time
// after the last message) the answer is offset -1 and timestamp -1, as
// Kafka's: clients take that for "none" and use the end offset themselves,
// while an offset without a timestamp breaks the Java client's
// offsetsForTimes. tid is the topic's Kafka ID (topicID), which keys what
// the MAX_TIMESTAMP scans learned.
func (c *conn) offsetFor(topic string, tid [16]byte, q equeue.QueueInfo, ts int64, deadline time.Time) (int64, int64, int16) {
	switch ts {
	case latestTimestamp:
		return q.MaxOffset, -1, errNone
	case earliestTimestamp:
		return q.MinOffset, -1, errNone
	case maxTimestamp:
		return c.maxTimestampOffset(topic, tid, q, deadline)
	}
	if ts < 0 {
		return -1, -1, errInvalidRequest
	}
	at := time.UnixMilli(ts)
	var (
		found  *equeue.Message
		errOut error
	)
	n := int(q.MaxOffset - q.MinOffset)
	i := sort.Search(n, func(i int) bool {
		if errOut != nil {
			return true
		}
		m, err := c.messageAt(topic, q.ID, q.MinOffset+int64(i))
		if err != nil {
			errOut = err
			return true
		}
		if m == nil || !m.StoredAt.Before(at) {
			if m != nil && (found == nil || m.Offset < found.Offset) {
				found = m
			}
			return true
		}
		return false
	})
	if errOut != nil {
		return -1, -1, errorCode(errOut)
	}
	if i >= n || found == nil {
		return -1, -1, errNone
	}
	return found.Offset, c.timestampOf(found), errNone
}

// messageAt returns the first message at or after off (nil when there is
// none up to the queue's end). A pull reads a bounded number of records:
// one that met only messages pulls skip (expired, damaged) returns none
// before the end, and the search goes on from where it stopped, reading
// more at a time, so a run of such messages is not taken for the end.
func (c *conn) messageAt(topic string, queue int, off int64) (*equeue.Message, error) {
	for n := 1; ; n = messageAtScan {
		res, err := c.s.b.Pull(c.ctx, &equeue.PullRequest{Topic: topic, Queue: queue, Offset: off, Max: n})
		switch {
		case err != nil:
			return nil, err
		case len(res.Messages) > 0:
			return res.Messages[0], nil
		case res.NextOffset <= off || res.NextOffset >= res.MaxOffset:
			return nil, nil
		}
		if err := c.ctx.Err(); err != nil {
			return nil, err
		}
		off = res.NextOffset
	}
}

// messageAtScan is how many messages messageAt asks a pull for once one
// found none: the pull reads that many records at a time.
const messageAtScan = 64

func (c *conn) timestampOf(m *equeue.Message) int64 {
	if c.s.o.LogAppendTime || m.BornAt.IsZero() {
		return m.StoredAt.UnixMilli()
	}
	return m.BornAt.UnixMilli()
}
