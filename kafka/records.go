package kafka

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// errBadBatch is returned for record data that is not a valid v2 record batch.
var errBadBatch = errors.New("kafka: bad record batch")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// batchHeaderSize is the bytes of a v2 record batch before its records.
const batchHeaderSize = 61

// producedBatch is one record batch of a produce request, decoded.
type producedBatch struct {
	producerID    int64
	producerEpoch int16
	firstSeq      int32
	msgs          []*equeue.Message
}

// lastSeq is the sequence number of the batch's last record. Sequence
// numbers wrap from MaxInt32 to 0, inside a batch too, as Kafka's
// DefaultRecordBatch.incrementSequence (and the clients) have it.
func (b *producedBatch) lastSeq() int32 {
	inc := int32(len(b.msgs)) - 1
	if b.firstSeq > math.MaxInt32-inc {
		return inc - (math.MaxInt32 - b.firstSeq) - 1
	}
	return b.firstSeq + inc
}

// decodeBatches decodes the record batches of one produce partition.
// Only magic 2 (record batches, Produce v3+) is accepted.
func decodeBatches(raw []byte, tagHeader string) ([]producedBatch, error) {
	var out []producedBatch
	for len(raw) > 0 {
		if len(raw) < 17 {
			return nil, fmt.Errorf("%w: %d trailing bytes", errBadBatch, len(raw))
		}
		// The magic byte is at the same place in the old message sets,
		// whose messages may be shorter than a batch header: it is read
		// first, so they are refused as a format, not as corrupt (which
		// clients retry).
		if magic := raw[16]; magic != 2 {
			return nil, fmt.Errorf("%w: message format v%d (only v2 record batches)", errUnsupportedFormat, magic)
		}
		length := int32(binary.BigEndian.Uint32(raw[8:]))
		if length < batchHeaderSize-12 || int(length) > len(raw)-12 {
			return nil, fmt.Errorf("%w: length %d", errBadBatch, length)
		}
		one := raw[:12+length]
		raw = raw[12+length:]
		if crc32.Checksum(one[21:], castagnoli) != binary.BigEndian.Uint32(one[17:]) {
			return nil, fmt.Errorf("%w: CRC mismatch", errBadBatch)
		}
		var rb kmsg.RecordBatch
		if err := rb.ReadFrom(one); err != nil {
			return nil, fmt.Errorf("%w: %v", errBadBatch, err)
		}
		if rb.Attributes&0x10 != 0 || rb.Attributes&0x20 != 0 {
			return nil, fmt.Errorf("%w: transactional or control batch", errBadBatch)
		}
		recs, err := decompress(int(rb.Attributes&7), rb.Records)
		if err != nil {
			return nil, err
		}
		b := producedBatch{producerID: rb.ProducerID, producerEpoch: rb.ProducerEpoch, firstSeq: rb.FirstSequence}
		if rb.NumRecords < 0 || int(rb.NumRecords) > len(recs) {
			return nil, fmt.Errorf("%w: %d records in %d bytes", errBadBatch, rb.NumRecords, len(recs))
		}
		// The count is the sender's word: the slice grows with the records
		// actually read, so a batch claiming millions sets little aside.
		b.msgs = make([]*equeue.Message, 0, min(rb.NumRecords, 1024))
		for range rb.NumRecords {
			n, k := binary.Varint(recs)
			if k <= 0 || n < 0 || int64(len(recs)-k) < n {
				return nil, fmt.Errorf("%w: record length", errBadBatch)
			}
			var r kmsg.Record
			if err := r.ReadFrom(recs[:k+int(n)]); err != nil {
				return nil, fmt.Errorf("%w: record: %v", errBadBatch, err)
			}
			recs = recs[k+int(n):]
			b.msgs = append(b.msgs, toMessage(&r, rb.FirstTimestamp, tagHeader))
		}
		if len(b.msgs) == 0 {
			return nil, fmt.Errorf("%w: empty batch", errBadBatch)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no records", errBadBatch)
	}
	return out, nil
}

// errUnsupportedFormat is returned for the message sets of Produce v0-v2.
var errUnsupportedFormat = errors.New("kafka: unsupported message format")

// toMessage maps a Kafka record to a message: key to the first key, value to
// the body, headers to properties (a repeated header keeps its last value,
// order is lost), the tag header to the tag, the timestamp to BornAt.
func toMessage(r *kmsg.Record, firstTS int64, tagHeader string) *equeue.Message {
	m := &equeue.Message{Body: r.Value}
	if r.Key != nil {
		m.Keys = []string{string(r.Key)}
	}
	if ts := firstTS + r.TimestampDelta64; ts > 0 {
		m.BornAt = time.UnixMilli(ts)
	}
	for _, h := range r.Headers {
		if h.Key == tagHeader {
			m.Tag = string(h.Value)
			continue
		}
		if m.Properties == nil {
			m.Properties = make(map[string]string, len(r.Headers))
		}
		m.Properties[h.Key] = string(h.Value)
	}
	return m
}

// batchWriter appends messages to a v2 record batch, uncompressed, without
// allocating per message; finish fills in the header.
type batchWriter struct {
	buf     []byte // whole batch; header first
	start   int    // where this batch starts in buf
	base    int64
	firstTS int64
	maxTS   int64
	last    int64
	n       int32
	rec     []byte // scratch for one record's body
}

// begin starts a batch at base offset base, appended to dst.
func (w *batchWriter) begin(dst []byte, base int64) {
	w.start = len(dst)
	w.buf = append(dst, make([]byte, batchHeaderSize)...)
	w.base, w.n, w.firstTS, w.maxTS, w.last = base, 0, -1, -1, base
}

// add appends one message as a record.
func (w *batchWriter) add(m *equeue.Message, tagHeader string, logAppend bool) {
	ts := m.BornAt.UnixMilli()
	if logAppend || m.BornAt.IsZero() {
		ts = m.StoredAt.UnixMilli()
	}
	if w.firstTS < 0 {
		w.firstTS = ts
	}
	w.maxTS = max(w.maxTS, ts)
	r := w.rec[:0]
	r = append(r, 0) // attributes
	r = binary.AppendVarint(r, ts-w.firstTS)
	r = binary.AppendVarint(r, m.Offset-w.base)
	if len(m.Keys) > 0 {
		r = binary.AppendVarint(r, int64(len(m.Keys[0])))
		r = append(r, m.Keys[0]...)
	} else {
		r = binary.AppendVarint(r, -1)
	}
	r = binary.AppendVarint(r, int64(len(m.Body)))
	r = append(r, m.Body...)
	nh := len(m.Properties)
	if m.Tag != "" {
		nh++
	}
	r = binary.AppendVarint(r, int64(nh))
	if m.Tag != "" {
		r = appendHeader(r, tagHeader, m.Tag)
	}
	for k, v := range m.Properties {
		r = appendHeader(r, k, v)
	}
	w.rec = r
	w.buf = binary.AppendVarint(w.buf, int64(len(r)))
	w.buf = append(w.buf, r...)
	w.last = m.Offset
	w.n++
}

func appendHeader(b []byte, k, v string) []byte {
	b = binary.AppendVarint(b, int64(len(k)))
	b = append(b, k...)
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

// finish writes the batch header and returns the buffer with the batch.
func (w *batchWriter) finish(logAppend bool) []byte {
	h := w.buf[w.start : w.start+batchHeaderSize]
	binary.BigEndian.PutUint64(h[0:], uint64(w.base))
	binary.BigEndian.PutUint32(h[8:], uint32(len(w.buf)-w.start-12))
	binary.BigEndian.PutUint32(h[12:], 0) // partition leader epoch
	h[16] = 2                             // magic
	var attrs uint16
	if logAppend {
		attrs |= 0x08
	}
	binary.BigEndian.PutUint16(h[21:], attrs)
	binary.BigEndian.PutUint32(h[23:], uint32(w.last-w.base))
	binary.BigEndian.PutUint64(h[27:], uint64(w.firstTS))
	binary.BigEndian.PutUint64(h[35:], uint64(w.maxTS))
	binary.BigEndian.PutUint64(h[43:], ^uint64(0)) // producer ID -1
	binary.BigEndian.PutUint16(h[51:], ^uint16(0)) // producer epoch -1
	binary.BigEndian.PutUint32(h[53:], ^uint32(0)) // base sequence -1
	binary.BigEndian.PutUint32(h[57:], uint32(w.n))
	binary.BigEndian.PutUint32(h[17:], crc32.Checksum(w.buf[w.start+21:], castagnoli))
	return w.buf
}
