package equeue

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/equeue-go/equeue/internal/slab"
)

// A stored batch carries the messages of one pull as the engine stored
// them: each message's record, byte for byte, with the offsets, topic and
// queue a pull sets. A broker serving a remote consumer copies the records
// it read into an answer instead of decoding them and encoding every field
// of every message again (it only checks each record's checksum, expiry and
// tag, scanRecord), and the consumer decodes them as the engine itself
// does. Records keep their own version byte and checksum, which the
// decoder checks again.
//
// Form (version 1), integers as unsigned varints:
//
//	version byte (1)
//	topic length, topic bytes
//	queue
//	message count
//	per message: offset (the first absolute, each next as the gap to the
//	one before less one), record length, record bytes
//
// Transport seam: package remote carries stored batches; applications do
// not use them.

// StoredBatchVersion is the version of the stored batches this build
// writes; it reads that version and every older one. A transport sends a
// batch only to a peer that reads its version.
const StoredBatchVersion = 1

// StoredRecords are the messages a pull found, as the engine stored them
// (Engine.PullStored): their records and offsets. The zero value, and nil,
// hold none.
type StoredRecords struct {
	ref     QueueRef
	offsets []int64  // ascending
	recs    [][]byte // the record at each offset
}

// Len is the number of messages.
func (s *StoredRecords) Len() int {
	if s == nil {
		return 0
	}
	return len(s.offsets)
}

// Offset is the offset of the i-th message, 0 <= i < Len().
func (s *StoredRecords) Offset(i int) int64 { return s.offsets[i] }

// QueueRef is the queue the messages are of.
func (s *StoredRecords) QueueRef() QueueRef { return s.ref }

// add appends the record rec at offset off.
func (s *StoredRecords) add(off int64, rec []byte) {
	s.offsets = append(s.offsets, off)
	s.recs = append(s.recs, rec)
}

// BatchSize sizes the stored batch of the pull's messages: n is the most
// first messages whose batch fits in limit bytes and size is that batch's
// length (with n zero, an empty batch's). ok is false when s holds no
// messages.
func (s *StoredRecords) BatchSize(limit int) (size, n int, ok bool) {
	if s.Len() == 0 || len(s.recs) != len(s.offsets) || s.ref.Queue < 0 {
		return 0, 0, false
	}
	head := 1 + stringLen(s.ref.Topic) + uvarintLen(uint64(s.ref.Queue))
	body := 0 // the messages' part
	prev := int64(-1)
	for i, off := range s.offsets {
		rec := s.recs[i]
		if off <= prev {
			return 0, 0, false
		}
		one := offsetGapLen(prev, off) + uvarintLen(uint64(len(rec))) + len(rec)
		if head+uvarintLen(uint64(n+1))+body+one > limit {
			break
		}
		body += one
		n++
		prev = off
	}
	return head + uvarintLen(uint64(n)) + body, n, true
}

// AppendBatch appends the stored batch of the pull's first n messages to
// b; n is from BatchSize.
func (s *StoredRecords) AppendBatch(b []byte, n int) []byte {
	b = append(b, StoredBatchVersion)
	b = appendString(b, s.ref.Topic)
	b = binary.AppendUvarint(b, uint64(s.ref.Queue))
	b = binary.AppendUvarint(b, uint64(n))
	prev := int64(-1)
	for i, off := range s.offsets[:n] {
		b = binary.AppendUvarint(b, uint64(off-prev-1))
		rec := s.recs[i]
		b = binary.AppendUvarint(b, uint64(len(rec)))
		b = append(b, rec...)
		prev = off
	}
	return b
}

// DecodeStoredBatch decodes a stored batch into the messages an Engine.Pull
// of them returned, but for their Priority, which the batch does not carry
// (the pull's PullResult.Priority: a transport sends it with the batch and
// sets it). The messages' bodies share b, which the caller must
// not change afterwards. A batch that is malformed, or holds a record that
// fails its checksum, is an error matching ErrCorrupt; one of a newer
// version also matches ErrUnsupportedFormat.
func DecodeStoredBatch(b []byte) ([]*Message, error) {
	if len(b) == 0 {
		return nil, fmt.Errorf("%w: empty stored batch", ErrCorrupt)
	}
	if v := b[0]; v == 0 || v > StoredBatchVersion {
		return nil, fmt.Errorf("%w: %w: stored batch version %d (this build reads 1 to %d)",
			ErrCorrupt, ErrUnsupportedFormat, v, StoredBatchVersion)
	}
	d := decoder{b: b[1:]}
	topic := d.str()
	queue := d.uvarint(MaxQueuesPerTopic - 1)
	// Each message takes at least a record's header.
	n := d.uvarint(uint64(len(d.b) / (recordFixedSize + 2)))
	if d.err != nil {
		return nil, fmt.Errorf("stored batch: %w", d.err)
	}
	// Room is made as the records are decoded, not for the count: a batch
	// that claims more messages than it holds costs what it holds.
	ahead := min(n, storedAhead)
	msgs := make([]*Message, 0, ahead)
	ms := slab.New[Message](int(n))
	ids := idFormatter{pending: make([]pendingID, 0, ahead)}
	off := int64(-1)
	for i := range n {
		off = d.nextOffset(off)
		rec := d.bytes()
		if d.err != nil {
			return nil, fmt.Errorf("stored batch, message %d: %w", i, d.err)
		}
		m := ms.Take()
		if err := decodeRecordTo(m, rec, &ids); err != nil {
			return nil, fmt.Errorf("stored batch, offset %d: %w", off, err)
		}
		m.Topic, m.Queue, m.Offset = topic, int(queue), off
		msgs = append(msgs, m)
	}
	if len(d.b) > 0 {
		return nil, fmt.Errorf("%w: %d bytes after a stored batch", ErrCorrupt, len(d.b))
	}
	ids.flush()
	return msgs, nil
}

// storedAhead is the most messages DecodeStoredBatch makes room for before
// it decoded them: a default pull's (32).
const storedAhead = 32

// nextOffset reads the gap from prev (-1 before the first message) to the
// next message's offset and returns that offset. No offset follows the
// largest one: a message after it is an error, not an offset wrapped
// around to a negative one.
func (d *decoder) nextOffset(prev int64) int64 {
	if d.err != nil {
		return prev
	}
	if prev == math.MaxInt64 {
		d.err = fmt.Errorf("%w: a message after offset %d", ErrCorrupt, prev)
		return prev
	}
	return prev + int64(d.uvarint(uint64(math.MaxInt64-prev-1))) + 1
}

// offsetGapLen is the length of off's varint after prev.
func offsetGapLen(prev, off int64) int { return uvarintLen(uint64(off - prev - 1)) }
