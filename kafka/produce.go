package kafka

import (
	"errors"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// produce stores each partition's record batches with one engine append per
// batch. Partitions are stored concurrently, so their writes share the
// engine's group commit.
func (c *conn) produce(req *kmsg.ProduceRequest) *kmsg.ProduceResponse {
	resp := kmsg.NewPtrProduceResponse()
	if req.TransactionID != nil {
		// Transactions are not offered; a transactional producer never
		// gets this far without InitProducerId, but refuse it anyway.
		for _, t := range req.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic = t.Topic
			for _, p := range t.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition, rp.ErrorCode = p.Partition, errInvalidRequest
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	var wg sync.WaitGroup
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
				c.producePartition(t.Topic, p.Partition, p.Records, rp)
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.producePartition(t.Topic, p.Partition, p.Records, rp)
			}()
		}
	}
	wg.Wait()
	return resp
}

func (c *conn) producePartition(topic string, part int32, records []byte, rp *kmsg.ProduceResponseTopicPartition) {
	rp.LogAppendTime = -1
	if hidden(topic) {
		rp.ErrorCode = errTopicAuthorizationFailed
		return
	}
	batches, err := decodeBatches(records, c.s.o.TagHeader)
	if err != nil {
		rp.ErrorCode = errCorruptMessage
		if errors.Is(err, errUnsupportedFormat) {
			rp.ErrorCode = errUnsupportedForMessageFmt
		}
		msg := err.Error()
		rp.ErrorMessage = &msg
		return
	}
	for i := range batches {
		base, code := c.storeBatch(topic, part, &batches[i])
		if code != errNone {
			rp.ErrorCode = code
			return
		}
		if i == 0 {
			rp.BaseOffset = base
		}
	}
}

// storeBatch appends one batch, checking an idempotent producer's sequence
// numbers first. It returns the batch's first offset.
func (c *conn) storeBatch(topic string, part int32, b *producedBatch) (int64, int16) {
	if b.producerID >= 0 {
		st := c.s.pids.lock(c.s.term(), b.producerID, topic, part)
		defer st.mu.Unlock()
		base, dup, code := st.check(b)
		if code != errNone || dup {
			return base, code
		}
		setIDs(b, part)
		base, code = c.appendBatch(topic, part, b)
		if code == errNone {
			st.stored(b, base)
		}
		return base, code
	}
	return c.appendBatch(topic, part, b)
}

// appendBatch stores a batch with one engine append. A batch larger than
// one store write holds (Kafka clients batch up to 1 MiB by default) is
// stored in consecutive chunks instead, under the partition's exclusive
// lock so no other Kafka producer's records land between them (native
// producers are not held back: their messages may, and then the offsets
// the client computes for the later chunks are not theirs).
// setIDs names an idempotent producer's records by producer, epoch,
// partition and sequence number. On a topic with a dedup window the engine
// then recognizes a batch sent again after an unknown outcome (a failed
// fsync, a lost connection mid-append), which the listener's own sequence
// check cannot: it only remembers batches it saw stored.
func setIDs(b *producedBatch, part int32) {
	prefix := "kafka-" + strconv.FormatInt(b.producerID, 10) + "-" + strconv.Itoa(int(b.producerEpoch)) + "-" + strconv.Itoa(int(part)) + "-"
	for i, m := range b.msgs {
		m.ID = prefix + strconv.FormatInt(int64(b.firstSeq)+int64(i), 10)
	}
}

func (c *conn) appendBatch(topic string, part int32, b *producedBatch) (int64, int16) {
	lk := c.s.partLock(topic, part)
	lk.RLock()
	base, err := c.appendMsgs(topic, part, b.msgs)
	lk.RUnlock()
	if errors.Is(err, equeue.ErrBatchTooLarge) && len(b.msgs) > 1 {
		lk.Lock()
		base, err = c.appendChunks(topic, part, b.msgs)
		lk.Unlock()
	}
	if err != nil {
		c.s.log.Debug("kafka: produce", "topic", topic, "partition", part, "err", err)
		return 0, errorCode(err)
	}
	return base, errNone
}

// appendChunks stores msgs in as few consecutive appends as fit, halving
// the chunk size until they do. A failure after the first chunk leaves the
// chunks before it stored.
func (c *conn) appendChunks(topic string, part int32, msgs []*equeue.Message) (int64, error) {
	size := (len(msgs) + 1) / 2
	base := int64(-1)
	for len(msgs) > 0 {
		n := min(size, len(msgs))
		first, err := c.appendMsgs(topic, part, msgs[:n])
		if errors.Is(err, equeue.ErrBatchTooLarge) && n > 1 {
			size = (n + 1) / 2
			continue
		}
		if err != nil {
			return 0, err
		}
		if base < 0 {
			base = first
		}
		msgs = msgs[n:]
	}
	return base, nil
}

func (c *conn) appendMsgs(topic string, part int32, msgs []*equeue.Message) (int64, error) {
	res, err := c.s.b.Append(c.ctx, &equeue.AppendRequest{Topic: topic, Queue: int(part), Messages: msgs})
	return res.FirstOffset, err
}
