package kafka

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// produce stores each partition's record batch (one a partition, as
// Kafka has it) with one engine append. Partitions are stored
// concurrently, so their writes share the engine's group commit. A panic while storing a partition is returned
// as the error that closes the connection, as one in the request's own
// goroutine is (handleRecovered).
func (c *conn) produce(req *kmsg.ProduceRequest) (*kmsg.ProduceResponse, error) {
	resp := kmsg.NewPtrProduceResponse()
	refuse := errNone
	switch {
	case req.TransactionID != nil:
		// Transactions are not offered; a transactional producer never
		// gets this far without InitProducerId, but refuse it anyway.
		refuse = errInvalidRequest
	case req.Acks != -1 && req.Acks != 0 && req.Acks != 1:
		refuse = errInvalidRequiredAcks
	}
	if refuse != errNone {
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode, rp.BaseOffset = p.Partition, refuse, -1
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil
	}
	// A compressed batch waits for its turn to decompress (inflateGate)
	// no longer than the request may take, or defaultProduceWait when
	// it gives no timeout.
	timeout := defaultProduceWait
	if req.TimeoutMillis > 0 {
		timeout = time.Duration(req.TimeoutMillis) * time.Millisecond
	}
	wait, cancel := context.WithTimeout(c.ctx, timeout)
	defer cancel()
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		failed error // the first panic of a partition's goroutine
	)
	resp.Topics = make([]kmsg.ProduceResponseTopic, len(req.Topics))
	for i, t := range req.Topics {
		rt := &resp.Topics[i]
		*rt = kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		rt.Partitions = make([]kmsg.ProduceResponseTopicPartition, len(t.Partitions))
		for j, p := range t.Partitions {
			rp := &rt.Partitions[j]
			*rp = kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			if len(req.Topics) == 1 && len(t.Partitions) == 1 {
				c.producePartition(wait, req.Version, t.Topic, p.Partition, p.Records, rp)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := c.producePartitionRecovered(wait, req.Version, t.Topic, p.Partition, p.Records, rp); err != nil {
					mu.Lock()
					if failed == nil {
						failed = err
					}
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if failed != nil {
		return nil, failed
	}
	if req.Acks != 0 { // else no answer is sent (conn.go)
		c.setLogStarts(resp)
	}
	return resp, nil
}

// producePartitionRecovered is producePartition for a goroutine of its
// own, which the connection's recovery (handleRecovered) does not cover: a
// panic is logged and returned as the error that closes the connection.
func (c *conn) producePartitionRecovered(wait context.Context, version int16, topic string, part int32, records []byte, rp *kmsg.ProduceResponseTopicPartition) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = c.panicked(p)
		}
	}()
	c.producePartition(wait, version, topic, part, records, rp)
	return nil
}

// producePartition stores one partition's batch and answers it in rp. A
// compressed batch first waits, until wait is done, for its turn to
// decompress (inflateGate), and holds it until stored.
func (c *conn) producePartition(wait context.Context, version int16, topic string, part int32, records []byte, rp *kmsg.ProduceResponseTopicPartition) {
	// A refused partition has no base offset, as in Kafka's answer: 0
	// would name a record the partition may hold; nor a log start.
	rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
	if hidden(topic) {
		rp.ErrorCode = errTopicAuthorizationFailed
		return
	}
	// As Kafka's broker: the partition must exist before its records
	// are looked at, so a damaged batch to a topic that does not exist
	// is answered UNKNOWN_TOPIC_OR_PARTITION (the client looks the
	// topic up again), not CORRUPT_MESSAGE (it sends the batch again).
	if code := c.partitionCode(topic, part); code != errNone {
		rp.ErrorCode = code
		return
	}
	if version < zstdProduceVersion && batchCodec(records) == codecZstd {
		// As Kafka: a client that negotiated a Produce older than v7 may
		// not know zstd's framing as Kafka defines it.
		rp.ErrorCode = errUnsupportedCompressionType
		msg := fmt.Sprintf("kafka: zstd needs Produce v%d or later, the request is v%d", zstdProduceVersion, version)
		rp.ErrorMessage = &msg
		return
	}
	b, held, err := c.decodeGated(wait, records)
	if held > 0 {
		defer c.s.inflate.unreserve(held)
	}
	var timedOut *inflateWaitError
	if errors.As(err, &timedOut) {
		rp.ErrorCode = errRequestTimedOut
		msg := err.Error()
		rp.ErrorMessage = &msg
		return
	}
	if err != nil {
		// CORRUPT_MESSAGE, which clients retry, is kept for a batch that
		// may have been damaged on its way (a CRC mismatch); a batch its
		// producer got wrong is refused with a code that is not retried.
		switch {
		case errors.Is(err, errUnsupportedFormat):
			rp.ErrorCode = errUnsupportedForMessageFmt
		case errors.Is(err, errUnknownCodec):
			rp.ErrorCode = errUnsupportedCompressionType
		case errors.Is(err, errBadTimestamp):
			rp.ErrorCode = errInvalidTimestamp
		case errors.Is(err, errInvalidBatch), errors.Is(err, errCodec):
			rp.ErrorCode = errInvalidRecord
		default:
			rp.ErrorCode = errCorruptMessage
		}
		msg := err.Error()
		rp.ErrorMessage = &msg
		return
	}
	at, code, err := c.storeBatch(topic, part, &b)
	if errors.Is(err, equeue.ErrInvalidName) {
		// Kafka's Produce does not check names: a topic it does not
		// have is UNKNOWN_TOPIC_OR_PARTITION, whatever its name.
		code = errUnknownTopicOrPartition
	}
	if code != errNone {
		rp.ErrorCode = code
		var partial *partialBatchError
		if errors.As(err, &partial) {
			msg := partial.Error()
			rp.ErrorMessage = &msg
		} else if refusedForCause(err) {
			msg := err.Error()
			rp.ErrorMessage = &msg
		}
		return
	}
	rp.BaseOffset = at.base
	if c.s.o.LogAppendTime && at.time > 0 {
		// As from a broker whose topics use LogAppendTime: the producer
		// learns the time consumers see.
		rp.LogAppendTime = at.time
	}
}

// partitionCode is errNone when topic has partition part, else the code
// a produce to it is answered: UNKNOWN_TOPIC_OR_PARTITION for a topic or
// partition that does not exist, whatever its name (Kafka's Produce does
// not check names, nor creates topics), or the code of the lookup's
// failure (a closed engine, a cluster node that does not lead).
func (c *conn) partitionCode(topic string, part int32) int16 {
	_, err := c.queueInfo(topic, part)
	if errors.Is(err, equeue.ErrInvalidName) {
		return errUnknownTopicOrPartition
	}
	return errorCode(err)
}

// decodeBatch decodes records, a compressed batch under the listener's
// inflate gate: it waits, until wait is done, for a turn to decompress,
// then reserves the inflated size before it gives the turn back, and
// returns the bytes held, which the caller gives back (unreserve) once
// the batch is stored. Waits that end with wait are an
// *inflateWaitError.
func (c *conn) decodeGated(wait context.Context, records []byte) (producedBatch, int64, error) {
	if batchCodec(records) <= codecNone {
		b, err := decodeBatch(records, c.s.o.TagHeader, c.s.o.LogAppendTime)
		return b, 0, err
	}
	if err := c.s.inflate.acquire(wait); err != nil {
		return producedBatch{}, 0, &inflateWaitError{err}
	}
	defer c.s.inflate.release()
	b, err := decodeBatch(records, c.s.o.TagHeader, c.s.o.LogAppendTime)
	if err != nil || b.inflated == 0 {
		return b, 0, err
	}
	if err := c.s.inflate.reserve(wait, int64(b.inflated)); err != nil {
		return producedBatch{}, 0, &inflateWaitError{err}
	}
	return b, int64(b.inflated), nil
}

// inflateWaitError is a compressed batch's wait for the inflate gate
// ended by its request's timeout (or its connection).
type inflateWaitError struct{ err error }

func (e *inflateWaitError) Error() string { return e.err.Error() }
func (e *inflateWaitError) Unwrap() error { return e.err }

// storedAt is where and when a batch was stored: its first offset and the
// time the engine stored it, in Unix milliseconds (0 when not known).
type storedAt struct {
	base, time int64
}

// storedAtOf is the storedAt of an append's result.
func storedAtOf(res equeue.AppendResult) storedAt {
	at := storedAt{base: res.FirstOffset}
	if !res.StoredAt.IsZero() {
		at.time = res.StoredAt.UnixMilli()
	}
	return at
}

// storeBatch appends one batch, checking an idempotent producer's sequence
// numbers first. It returns where and when the batch was stored (a retried
// batch: where and when it was stored first), or the Kafka error code of
// its refusal and, when the engine refused it, the engine's error.
func (c *conn) storeBatch(topic string, part int32, b *producedBatch) (storedAt, int16, error) {
	if b.producerID >= 0 {
		term := c.s.term()
		st := c.s.pids.lock(term, b.producerID, topic, part)
		defer st.mu.Unlock()
		// A state with a partial try knows what the term stored of the
		// producer; a first batch (sequence 0) may be the retry of one a
		// restart cut off, unless the listener handed its ID out since.
		if !st.known && st.partial == nil && (b.firstSeq != 0 || !c.s.pids.handedOut(term, b.producerID)) {
			floor, err := c.rebuild(topic, part, b, st)
			if err != nil {
				// Not known whether the producer stored the batch
				// already: refused, to be retried, and what the
				// read learned forgotten (a failed first batch kept).
				failed := st.failedFirst
				st.reset()
				st.failedFirst = failed
				return storedAt{}, errorCode(err), err
			}
			st.keepFailedFirst(term, floor)
		} else if err := c.readBackTo(topic, part, b, st); err != nil {
			return storedAt{}, errorCode(err), err
		}
		st.resumeLogged(b)
		first, dup, code := st.check(b)
		if (code != errNone || dup) && c.topicReplaced(topic, st.topicID) {
			// The state is of a topic deleted since, outside the
			// listener: the batch is the first of the topic there is now.
			st.reset()
			first, dup, code = st.check(b)
		}
		if code != errNone || dup {
			return first, code, nil
		}
		id, end := st.topicID, int64(-1)
		if !st.known || id == 0 {
			// Learned before the append: a topic made again between the
			// two leaves a state that the next refusal finds replaced
			// (forgotten, the safe way), never one that passes for the
			// new topic's. A state whose lookup failed tries again with
			// each batch until one succeeds: without an ID it would be
			// taken for the topic's whatever topic of that name there is,
			// until it expires (producerIdle).
			// The partition's end, read with it, bounds where the
			// records of a failed try may be (failedBatch.end).
			id, end = c.topicIDAndEnd(topic, part)
		}
		c.s.marks.setIDs(b, topic, part)
		done, prior := st.storedPart(b)
		at, err := c.appendRest(topic, part, b.msgs, done, prior)
		if err == nil {
			st.stored(b, at)
			st.topicID = id
		} else {
			st.failed(b, err, end)
			if st.failedFirst != nil {
				st.topicID = id // a topic made again under the name is not this one
			}
			c.s.pids.forgetUnknown(b.producerID, topic, part, st)
		}
		return at, errorCode(err), err
	}
	at, err := c.appendBatch(topic, part, b.msgs)
	return at, errorCode(err), err
}

// topicIDAndEnd returns the ID of topic (equeue.TopicInfo.ID) and the end
// offset of its partition part: 0 and -1 when they cannot be read, the
// ID and -1 when the topic has no such partition (see topicPart).
func (c *conn) topicIDAndEnd(topic string, part int32) (uint32, int64) {
	id, q, err := c.topicPart(topic, part)
	if errors.Is(err, equeue.ErrQueueNotFound) {
		return id, -1
	}
	if err != nil {
		return 0, -1
	}
	return id, q.MaxOffset
}

// setLogStarts gives each stored partition of a produce answer its log
// start offset: the queue's low watermark, what retention left, read once
// the request's appends are done; -1, Kafka's "not known", when it cannot
// be read. With a Broker that describes one queue at that queue's cost
// (queueDescriber), each partition is read alone: a description of the
// topic reads every partition of it, so a request writing one partition
// of a topic of many cost them all. Else a topic is described once for
// all its partitions, not once a partition, which would cost a request
// writing all of them their count squared.
func (c *conn) setLogStarts(resp *kmsg.ProduceResponse) {
	_, perQueue := c.s.b.(queueDescriber)
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		var ti *equeue.TopicInfo
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			if rp.ErrorCode != errNone || rp.BaseOffset < 0 {
				continue
			}
			if perQueue {
				if q, err := c.queueInfo(rt.Topic, rp.Partition); err == nil {
					rp.LogStartOffset = q.MinOffset
				}
				continue
			}
			if ti == nil {
				got, err := c.s.b.Topic(c.ctx, rt.Topic)
				if err != nil {
					break
				}
				ti = &got
			}
			if rp.Partition >= 0 && int(rp.Partition) < len(ti.Queues) {
				rp.LogStartOffset = ti.Queues[rp.Partition].MinOffset
			}
		}
	}
}

// topicReplaced reports whether topic, whose ID was id when a producer's
// sequence state was learned on it, was deleted since: it is missing, or
// has another ID (deleted and made again under its name). With id 0 (not
// known), or when the topic cannot be read, it reports false: the state is
// kept. It is asked only when the state refuses a batch or takes it for a
// duplicate, so batches in order cost no lookup; with a Broker that tells
// its topics' version, the topic's ID read while the version stays
// (topicIDCache) answers it, so a retry storm of duplicates, or batches
// refused, costs no description of the topic each, which reads all its
// partitions.
func (c *conn) topicReplaced(topic string, id uint32) bool {
	if id == 0 {
		return false
	}
	v, versioned := c.s.topicsVersion()
	if versioned {
		if now, ok := c.s.topicIDs.get(topic, v); ok {
			return now != id
		}
	}
	ti, err := c.s.b.Topic(c.ctx, topic)
	if err != nil {
		return errors.Is(err, equeue.ErrTopicNotFound)
	}
	if now, _ := c.s.topicsVersion(); versioned && now == v {
		// No topic created or deleted during the read: the ID is the
		// topic's at v.
		c.s.topicIDs.put(topic, v, ti.ID)
	}
	return ti.ID != id
}

// appendRest stores msgs but their first done, which an earlier try of
// the batch stored from prior (done 0: none), and returns where and when
// the batch's first record was stored. A failure is a *partialBatchError
// when some of msgs are stored, counting the first done.
func (c *conn) appendRest(topic string, part int32, msgs []*equeue.Message, done int, prior storedAt) (storedAt, error) {
	if done == 0 {
		return c.appendBatch(topic, part, msgs)
	}
	_, err := c.appendBatch(topic, part, msgs[done:])
	if err == nil {
		return prior, nil
	}
	var partial *partialBatchError
	if errors.As(err, &partial) {
		done += partial.stored
		err = partial.err
	}
	return storedAt{}, &partialBatchError{stored: done, of: len(msgs), at: prior, err: err}
}

// setIDs names an idempotent producer's records by producer, epoch,
// partition and sequence number, each ID ending with its mark
// (recordMarks), by which rebuild tells them from native messages. On a
// topic with a dedup window the engine then recognizes a batch sent again
// after an unknown outcome (a failed fsync, a lost connection
// mid-append), which the listener's own sequence check cannot: it only
// remembers batches it saw stored.
func (k recordMarks) setIDs(b *producedBatch, topic string, part int32) {
	prefix := "kafka-" + strconv.FormatInt(b.producerID, 10) + "-" + strconv.Itoa(int(b.producerEpoch)) + "-" + strconv.Itoa(int(part)) + "-"
	mk := k.mac()
	for i, m := range b.msgs {
		msg := mk.named(topic)
		start := len(msg)
		msg = append(msg, prefix...)
		// The number wraps around as the producer's do (seqAt), so the
		// read back (producerSeqOf) finds a batch across the wrap whole.
		msg = strconv.AppendInt(msg, int64(seqAt(b, i)), 10)
		m.ID = marked(msg[start:], mk.sum(msg))
	}
}

// appendBatch stores a batch with one engine append. A batch larger than
// one store write holds (Kafka clients batch up to 1 MiB by default) is
// stored in consecutive chunks instead, under the partition's exclusive
// lock so no other Kafka producer's records land between them (native
// producers are not held back: their messages may, and then the offsets
// the client computes for the later chunks are not theirs). A chunk that
// fails after others were stored fails the batch with a
// *partialBatchError.
func (c *conn) appendBatch(topic string, part int32, msgs []*equeue.Message) (storedAt, error) {
	lk := c.s.acquirePart(topic, part)
	defer c.s.releasePart(lk)
	lk.RLock()
	at, err := c.appendMsgs(topic, part, msgs)
	lk.RUnlock()
	if errors.Is(err, equeue.ErrBatchTooLarge) && len(msgs) > 1 {
		lk.Lock()
		at, err = c.appendChunks(topic, part, msgs)
		lk.Unlock()
	}
	if err != nil {
		c.s.log.Debug("kafka: produce", "topic", topic, "partition", part, "err", err)
		return storedAt{}, err
	}
	return at, nil
}

// appendChunks stores msgs in as few consecutive appends as fit, halving
// the chunk size until they do; it returns where and when the first chunk
// was stored. A failure after the first chunk leaves the chunks before it
// stored, and is returned as a *partialBatchError that says so.
func (c *conn) appendChunks(topic string, part int32, msgs []*equeue.Message) (storedAt, error) {
	size := (len(msgs) + 1) / 2
	at := storedAt{base: -1}
	total := len(msgs)
	for len(msgs) > 0 {
		n := min(size, len(msgs))
		chunk, err := c.appendMsgs(topic, part, msgs[:n])
		if errors.Is(err, equeue.ErrBatchTooLarge) && n > 1 {
			size = (n + 1) / 2
			continue
		}
		if err != nil && at.base >= 0 {
			return storedAt{}, &partialBatchError{stored: total - len(msgs), of: total, at: at, err: err}
		}
		if err != nil {
			return storedAt{}, err
		}
		if at.base < 0 {
			at = chunk
		}
		msgs = msgs[n:]
	}
	return at, nil
}

// appendMsgs stores msgs with one engine append, which the connection's
// end does not cancel (appendContext). None starts once the connection
// ended: its error is returned, nothing stored (a batch's later chunks
// are not stored after Server.Close, which waits for the one in flight
// alone).
func (c *conn) appendMsgs(topic string, part int32, msgs []*equeue.Message) (storedAt, error) {
	if err := c.ctx.Err(); err != nil {
		return storedAt{}, err
	}
	ctx, done := c.appendContext()
	defer done()
	res, err := c.s.b.Append(ctx, &equeue.AppendRequest{Topic: topic, Queue: int(part), Messages: msgs})
	return storedAtOf(res), err
}

// partialBatchError is returned for a batch stored in chunks (see
// appendBatch) when a chunk failed after others were stored: the batch's
// first records are stored, from at, and the rest are not (or, when err
// matches equeue.ErrIndeterminate, the chunk that failed may be). Kafka
// has no answer for that, since it stores a batch whole: the partition is
// answered with the failure's error code, which clients retry, and with
// this error's text as the error message, which tells which records are
// stored. An idempotent producer's retry stores the others only
// (seqState.failed); another producer's retry is a new batch, stored
// whole, its first records a second time, unless the topic's dedup
// window recognizes them.
type partialBatchError struct {
	stored, of int      // records stored, of the batch's
	at         storedAt // where and when the first record was stored
	err        error    // the chunk's failure
}

func (e *partialBatchError) Error() string {
	rest := "the others were not"
	if errors.Is(e.err, equeue.ErrIndeterminate) {
		rest = "whether the others were is not known"
	}
	return fmt.Sprintf("kafka: only the first %d of the batch's %d records were stored, from offset %d; %s", e.stored, e.of, e.at.base, rest)
}

func (e *partialBatchError) Unwrap() error { return e.err }

// zstdProduceVersion is the first Produce version that may carry batches
// compressed with zstd (KIP-110).
const zstdProduceVersion = 7

// batchCodec is the compression codec of the v2 record batch records
// starts with, -1 when it is too short or no v2 batch (decodeBatch says
// why).
func batchCodec(records []byte) int {
	if len(records) < 23 || records[16] != 2 {
		return -1
	}
	return int(binary.BigEndian.Uint16(records[21:]) & 7)
}

// refusedForCause reports whether err refuses a batch for what the batch
// or its topic is (a full topic, a message too large, a queue not
// writable, bad input), not for a failure of the broker's: such an
// error's text is the producer's to read in its answer, where a store
// failure's, which may name the broker's files, is not sent. A full topic
// shares KAFKA_STORAGE_ERROR with store failures (both are retried), so
// only the message tells them apart.
func refusedForCause(err error) bool {
	for _, cause := range []error{equeue.ErrTopicFull, equeue.ErrMessageTooLarge, equeue.ErrBatchTooLarge, equeue.ErrQueueNotWritable, equeue.ErrInvalidArgument} {
		if errors.Is(err, cause) {
			return true
		}
	}
	return false
}
