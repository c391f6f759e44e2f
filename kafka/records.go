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

// errBadBatch is returned for record data that is not a whole v2 record
// batch: shorter than its header or its length says, or with a CRC that
// does not match (Kafka's CorruptRecordException: CORRUPT_MESSAGE, which
// clients retry).
var errBadBatch = errors.New("kafka: bad record batch")

// errInvalidBatch is returned for a whole record batch (its CRC matches)
// whose content Kafka's broker refuses (its InvalidRecordException:
// INVALID_RECORD, which clients do not retry): no batch or more than one for a
// partition, a record count or offset range that does not match the
// records, records whose lengths do not add up, a control or
// transactional batch, an idempotent batch without a sequence number.
var errInvalidBatch = errors.New("kafka: invalid record batch")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// logAppendTimeAttr is the timestamp type bit of a v2 batch's
// attributes: set, the records' time is the batch's MaxTimestamp, the
// time the broker appended them.
const logAppendTimeAttr = 0x08

// batchHeaderSize is the bytes of a v2 record batch before its records.
const batchHeaderSize = 61

// producedBatch is one record batch of a produce request, decoded.
type producedBatch struct {
	producerID    int64
	producerEpoch int16
	firstSeq      int32
	msgs          []*equeue.Message
	// inflated is the size of the records decompressed (0 for a batch
	// that was not compressed): what its messages hold of the memory.
	inflated int
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

// decodeBatch decodes the records of one produce partition: one record
// batch, as Kafka has it for Produce v3+ (ProduceRequest.validateRecords),
// so a partition's records are stored or refused together. Only magic 2
// is accepted. The batch is checked as Kafka's broker checks it
// (DefaultRecordBatch, DefaultRecord, LogValidator.validateBatch) before
// anything is stored. With logAppend (Options.LogAppendTime) a record
// time a BornAt cannot hold (recordBornAt) is the append's, not refused.
func decodeBatch(raw []byte, tagHeader string, logAppend bool) (producedBatch, error) {
	if len(raw) == 0 {
		return producedBatch{}, fmt.Errorf("%w: no record batch", errInvalidBatch)
	}
	if len(raw) < 17 {
		return producedBatch{}, fmt.Errorf("%w: %d bytes", errBadBatch, len(raw))
	}
	// The magic byte is at the same place in the old message sets, whose
	// messages may be shorter than a batch header: it is read first, so
	// they are refused as a format, not as corrupt (which clients retry).
	if magic := raw[16]; magic != 2 {
		return producedBatch{}, fmt.Errorf("%w: message format v%d (only v2 record batches)", errUnsupportedFormat, magic)
	}
	length := int32(binary.BigEndian.Uint32(raw[8:]))
	if length < batchHeaderSize-12 || int(length) > len(raw)-12 {
		return producedBatch{}, fmt.Errorf("%w: length %d", errBadBatch, length)
	}
	if rest := len(raw) - 12 - int(length); rest > 0 {
		return producedBatch{}, fmt.Errorf("%w: %d bytes after the record batch (one batch per partition)", errInvalidBatch, rest)
	}
	if crc32.Checksum(raw[21:], castagnoli) != binary.BigEndian.Uint32(raw[17:]) {
		return producedBatch{}, fmt.Errorf("%w: CRC mismatch", errBadBatch)
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		return producedBatch{}, fmt.Errorf("%w: %v", errBadBatch, err)
	}
	switch {
	case rb.Attributes&0x10 != 0 || rb.Attributes&0x20 != 0:
		return producedBatch{}, fmt.Errorf("%w: transactional or control batch", errInvalidBatch)
	case rb.Attributes&logAppendTimeAttr != 0:
		// The broker sets it; Kafka's LogValidator refuses it from a
		// producer with INVALID_TIMESTAMP.
		return producedBatch{}, fmt.Errorf("%w: timestamp type LogAppendTime is the broker's to set, not the producer's", errBadTimestamp)
	case rb.NumRecords <= 0:
		return producedBatch{}, fmt.Errorf("%w: record count %d", errInvalidBatch, rb.NumRecords)
	case int64(rb.LastOffsetDelta)+1 != int64(rb.NumRecords):
		return producedBatch{}, fmt.Errorf("%w: last offset delta %d for %d records", errInvalidBatch, rb.LastOffsetDelta, rb.NumRecords)
	case rb.ProducerID >= 0 && rb.FirstSequence < 0:
		return producedBatch{}, fmt.Errorf("%w: producer %d without a sequence number", errInvalidBatch, rb.ProducerID)
	}
	recs, err := decompress(int(rb.Attributes&7), rb.Records)
	if err != nil {
		return producedBatch{}, err
	}
	b := producedBatch{producerID: rb.ProducerID, producerEpoch: rb.ProducerEpoch, firstSeq: rb.FirstSequence}
	if rb.Attributes&7 != codecNone {
		b.inflated = len(recs)
	}
	if int(rb.NumRecords) > len(recs) {
		return producedBatch{}, fmt.Errorf("%w: %d records in %d bytes", errInvalidBatch, rb.NumRecords, len(recs))
	}
	// The count is the sender's word: the slice grows with the records
	// actually read, so a batch claiming millions sets little aside.
	b.msgs = make([]*equeue.Message, 0, min(rb.NumRecords, 1024))
	for i := range rb.NumRecords {
		n, k := binary.Varint(recs)
		if k <= 0 || n < 0 || int64(len(recs)-k) < n {
			return producedBatch{}, fmt.Errorf("%w: record %d: length", errInvalidBatch, i)
		}
		var r kmsg.Record
		if err := readRecord(recs[k:k+int(n)], &r); err != nil {
			return producedBatch{}, fmt.Errorf("%w: record %d: %v", errInvalidBatch, i, err)
		}
		recs = recs[k+int(n):]
		born, err := recordBornAt(i, rb.FirstTimestamp, r.TimestampDelta64)
		if err != nil && logAppend && errors.Is(err, errBadTimestamp) {
			// LogAppendTime: the time answered is the append's, and
			// Kafka does not look at the producer's (LogValidator checks
			// CreateTime only); it gets the append's time here too.
			born, err = time.Time{}, nil
		}
		if err != nil {
			return producedBatch{}, err
		}
		b.msgs = append(b.msgs, toMessage(&r, born, tagHeader))
	}
	if len(recs) > 0 {
		return producedBatch{}, fmt.Errorf("%w: %d bytes after record %d of %d", errInvalidBatch, len(recs), rb.NumRecords, rb.NumRecords)
	}
	return b, nil
}

// errUnsupportedFormat is returned for the message sets of Produce v0-v2.
var errUnsupportedFormat = errors.New("kafka: unsupported message format")

// toMessage maps a Kafka record to a message: key to the first key, value to
// the body, headers to properties (a repeated header keeps its last value,
// order is lost), the tag header to the tag, and born (recordBornAt) to
// BornAt.
func toMessage(r *kmsg.Record, born time.Time, tagHeader string) *equeue.Message {
	m := &equeue.Message{Body: r.Value, BornAt: born}
	if r.Key != nil {
		m.Keys = []string{string(r.Key)}
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
	firstTS int64 // the batch's base timestamp (baseTimestamp)
	lead    int64 // the first record's time
	maxTS   int64
	last    int64
	n       int32
	rec     []byte // scratch for one record's body
}

// begin starts a batch at base offset base, appended to dst.
func (w *batchWriter) begin(dst []byte, base int64) {
	w.start = len(dst)
	w.buf = append(dst, make([]byte, batchHeaderSize)...)
	w.base, w.n, w.firstTS, w.lead, w.maxTS, w.last = base, 0, -1, -1, -1, base
}

// recordTime is the time a fetched record of m carries, in Unix
// milliseconds: its BornAt (CreateTime) or, with logAppend or without a
// BornAt, the time it was stored; noTimestamp when neither is known.
func recordTime(m *equeue.Message, logAppend bool) int64 {
	if m.BornAt.IsZero() && m.StoredAt.IsZero() {
		return noTimestamp // no time known: not year 1's
	}
	if logAppend || m.BornAt.IsZero() {
		return m.StoredAt.UnixMilli()
	}
	return m.BornAt.UnixMilli()
}

// maxSaramaDelta is the largest timestamp delta, in milliseconds, that
// sarama reads right: it holds a delta as a time.Duration.
const maxSaramaDelta = math.MaxInt64 / int64(time.Millisecond)

// fits reports whether a record of time ts (recordTime) may join the
// batch, which holds a record already, and be read back at that time by
// every client. Each reads a record's time as the batch's base timestamp
// plus the record's delta, which holds any time; but with LogAppendTime
// clients give every record the batch's MaxTimestamp, and sarama takes a
// negative base for none (year 1) and wraps a delta of more than about
// 292 years. So a batch's base is never negative but for a batch of
// records without a time (all noTimestamp, read as none, as from Kafka),
// and a record joins a batch only when its delta stays in sarama's range.
func (w *batchWriter) fits(ts int64, logAppend bool) bool {
	switch {
	case logAppend:
		return ts == w.lead
	case ts == noTimestamp || w.lead == noTimestamp:
		return ts == w.lead
	}
	d := ts - w.firstTS
	return d >= -maxSaramaDelta && d <= maxSaramaDelta
}

// add appends one message as a record.
func (w *batchWriter) add(m *equeue.Message, tagHeader string, logAppend bool) {
	ts := recordTime(m, logAppend)
	if w.n == 0 {
		// From the first record: a time before 1970 is below the -1
		// begin leaves them at. The base is the first record's time,
		// as Kafka's clients write it, but 0 for a time before 1970
		// (see fits): every time a BornAt holds, 1678 to 2262, is
		// within sarama's reach of 0.
		w.firstTS, w.lead, w.maxTS = ts, ts, ts
		if ts < noTimestamp {
			w.firstTS = 0
		}
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
		attrs |= logAppendTimeAttr
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
