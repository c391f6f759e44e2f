package kafka

import (
	"errors"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// errFetchSessionNotFound answers an incremental fetch: sessions are not
// kept, so every fetch names all its partitions.
const errFetchSessionNotFound int16 = 70

// fetchScratch is reused by a connection's fetches: the record batches of
// one response are written into buf (the response is sent before the next
// request is read) and the batch writer keeps its record scratch.
type fetchScratch struct {
	buf   []byte
	w     batchWriter
	pulls []*equeue.PullRequest
	// more is set when a partition has messages the fetch left for the
	// next one (byte or count bounds): waiting for appends cannot help.
	more bool
}

// fetchRecords answers a Fetch: it reads every partition at once and, while
// fewer than MinBytes were found, waits up to MaxWait for an append to any
// of them (a long poll woken by the append, not by polling).
func (c *conn) fetchRecords(req *kmsg.FetchRequest) *kmsg.FetchResponse {
	if req.SessionID != 0 {
		resp := kmsg.NewPtrFetchResponse()
		resp.ErrorCode = errFetchSessionNotFound
		return resp
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMillis, 0)) * time.Millisecond)
	for {
		resp, n, wait := c.fetchOnce(req)
		left := time.Until(deadline)
		if n >= int(req.MinBytes) || !wait || c.fetch.more || len(c.fetch.pulls) == 0 || left <= 0 || c.ctx.Err() != nil {
			return resp
		}
		c.waitAppend(left)
	}
}

// waitAppend waits until one of the last fetch's partitions has something
// at its offset, or for d.
func (c *conn) waitAppend(d time.Duration) {
	if w, ok := c.s.b.(waiter); ok {
		_ = w.WaitAny(c.ctx, c.fetch.pulls, d)
		return
	}
	if len(c.fetch.pulls) > 0 {
		p := *c.fetch.pulls[0]
		p.Wait, p.Max = d, 1
		_, _ = c.s.b.Pull(c.ctx, &p)
	}
}

// fetchOnce reads each partition once. It returns the response, the bytes
// of records in it, and whether waiting could help (no partition failed).
func (c *conn) fetchOnce(req *kmsg.FetchRequest) (*kmsg.FetchResponse, int, bool) {
	resp := kmsg.NewPtrFetchResponse()
	// MaxBytes 0 (or less) is a bound too, as Kafka has it: only the
	// first message goes out (KIP-74, fetchPartition). Before v3 the
	// request has none.
	budget := max(int(req.MaxBytes), 0)
	if req.GetVersion() < 3 {
		budget = math.MaxInt32
	}
	sc := &c.fetch
	sc.buf = sc.buf[:0]
	sc.pulls = sc.pulls[:0]
	sc.more = false
	total, canWait := 0, true
	resp.Topics = make([]kmsg.FetchResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewFetchResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.FetchResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewFetchResponseTopicPartition()
			rp.Partition = p.Partition
			n, code := c.fetchPartition(t.Topic, p, budget, total == 0, rp)
			rp.ErrorCode = code
			if code != errNone {
				canWait = false
			}
			total += n
			budget -= n
		}
	}
	return resp, total, canWait
}

// fetchPartition reads one partition from its fetch offset into rp. When
// first is set and the first message is larger than the byte bounds, it is
// returned alone anyway (KIP-74), so a large message never stalls a consumer.
func (c *conn) fetchPartition(topic string, p kmsg.FetchRequestTopicPartition, budget int, first bool, rp *kmsg.FetchResponseTopicPartition) (int, int16) {
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = -1, -1, -1
	if hidden(topic) {
		return 0, errTopicAuthorizationFailed
	}
	maxBytes := min(int(p.PartitionMaxBytes), budget)
	pr := &equeue.PullRequest{Topic: topic, Queue: int(p.Partition), Offset: p.FetchOffset, Max: equeue.MaxPullBatch, MaxBytes: max(maxBytes, 1)}
	res, err := c.s.b.Pull(c.ctx, pr)
	if errors.Is(err, equeue.ErrMessageTooLarge) {
		// The first message is larger than what is left: the first
		// partition of a fetch returns it alone anyway; the others only
		// report their bounds, and the next fetch gets it.
		one := *pr
		one.Max, one.MaxBytes = 1, 0
		res, err = c.s.b.Pull(c.ctx, &one)
		if err == nil && !first {
			rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.MaxOffset, res.MaxOffset, res.MinOffset
			c.fetch.more = true
			return 0, errNone
		}
	}
	if errors.Is(err, equeue.ErrInvalidName) {
		// Kafka's Fetch does not check names: a topic it does not have
		// is UNKNOWN_TOPIC_OR_PARTITION, whatever its name.
		return 0, errUnknownTopicOrPartition
	}
	if err != nil {
		return 0, errorCode(err)
	}
	rp.HighWatermark, rp.LastStableOffset, rp.LogStartOffset = res.MaxOffset, res.MaxOffset, res.MinOffset
	switch res.Status {
	case equeue.PullOffsetMoved:
		return 0, errOffsetOutOfRange
	case equeue.PullNoNewMessage:
		c.fetch.pulls = append(c.fetch.pulls, pr)
		return 0, errNone
	case equeue.PullNoMatch:
		if res.NextOffset <= p.FetchOffset {
			c.fetch.pulls = append(c.fetch.pulls, pr)
			return 0, errNone
		}
	}
	// A batch whose last offset delta reaches NextOffset-1 moves the
	// consumer past messages the engine skipped (expired, corrupt), even
	// when none is returned.
	sc := &c.fetch
	start := len(sc.buf)
	sc.w.begin(sc.buf, p.FetchOffset)
	if len(res.Messages) > 0 {
		sc.w.base = res.Messages[0].Offset
	}
	next := res.NextOffset
	for i, m := range res.Messages {
		w, buf := sc.w, sc.buf // to take m out again
		if sc.w.n > 0 && !sc.w.fits(recordTime(m, c.s.o.LogAppendTime), c.s.o.LogAppendTime) {
			// A message whose time clients would not read right in
			// this batch (with LogAppendTime: one stored in another
			// millisecond) starts another.
			sc.buf = sc.w.finish(c.s.o.LogAppendTime)
			sc.w.begin(sc.buf, m.Offset)
		}
		sc.w.add(m, c.s.o.TagHeader, c.s.o.LogAppendTime)
		// The pull bounded the messages' stored size; what is sent
		// (record batch headers, one per millisecond with LogAppendTime,
		// and record framing) must fit the fetch's byte bounds too: a
		// client may size its receive buffer by them (librdkafka's
		// receive.message.max.bytes). Only the fetch's first message
		// goes out regardless (KIP-74).
		if len(sc.w.buf)-start > maxBytes && (i > 0 || !first) {
			if i == 0 {
				sc.buf = sc.buf[:start]
				c.fetch.more = true
				return 0, errNone
			}
			sc.w, sc.buf = w, buf
			next = w.last + 1
			break
		}
	}
	if sc.w.n == 0 {
		sc.w.firstTS, sc.w.maxTS = time.Now().UnixMilli(), time.Now().UnixMilli()
	}
	sc.w.last = next - 1
	sc.buf = sc.w.finish(c.s.o.LogAppendTime)
	rp.RecordBatches = sc.buf[start:]
	// A fetch still short of MinBytes waits for appends here too: from
	// the end, or not at all when messages were left for the next fetch.
	if next < res.NextOffset || res.NextOffset < res.MaxOffset {
		c.fetch.more = true
	} else {
		pr.Offset = res.NextOffset
		c.fetch.pulls = append(c.fetch.pulls, pr)
	}
	return len(sc.buf) - start, errNone
}
