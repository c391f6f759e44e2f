package equeue

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"time"
)

// Record layout, version 1. Numbers are big-endian or uvarint.
//
//	[0]      version (1)
//	[1:5]    CRC-32C of bytes [5:]
//	[5:13]   stored-at, unix nanoseconds (patched by the writer)
//	[13:21]  born-at, unix nanoseconds
//	[21:29]  deliver-at, unix nanoseconds, 0 = none
//	[29:37]  expires-at, unix nanoseconds, 0 = none
//	then     attempt uvarint, id, tag, keys, properties, system properties, body
//
// Strings and the body are a uvarint length followed by the bytes; lists and
// maps are a uvarint count followed by their items.
const (
	recordVersion    = 1
	recordHeaderSize = 37
	storedAtPos      = 5
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// What a record can hold. Times are int64 unix nanoseconds (1677-09-21 to
// 2262-04-11 UTC) with 0 meaning "none", so the instant of the Unix epoch
// itself cannot be stored; the decoder refuses an attempt above 1<<30.
var (
	minRecordTime = time.Unix(0, math.MinInt64)
	maxRecordTime = time.Unix(0, math.MaxInt64)
)

const maxRecordAttempt = 1<<30 - 1

// checkRecord reports, with an error wrapping ErrInvalidArgument, a field of
// m that encodeRecord could not write so that decodeRecord reads it back:
// encodeRecord must only be given messages that pass it (with born being the
// born-at time to store).
func checkRecord(m *Message, born time.Time) error {
	if m.Attempt < 0 || m.Attempt > maxRecordAttempt {
		return fmt.Errorf("%w: attempt %d not in 0..%d", ErrInvalidArgument, m.Attempt, maxRecordAttempt)
	}
	for _, f := range []struct {
		name string
		t    time.Time
	}{{"born-at", born}, {"deliver-at", m.DeliverAt}, {"expires-at", m.ExpiresAt}} {
		if err := checkRecordTime(f.name, f.t); err != nil {
			return err
		}
	}
	return nil
}

func checkRecordTime(name string, t time.Time) error {
	switch {
	case t.IsZero():
		return nil
	case t.Before(minRecordTime) || t.After(maxRecordTime):
		return fmt.Errorf("%w: %s %v outside %v..%v", ErrInvalidArgument, name, t.UTC(), minRecordTime.UTC(), maxRecordTime.UTC())
	case t.UnixNano() == 0:
		return fmt.Errorf("%w: %s at the Unix epoch reads back as unset; use the zero time.Time", ErrInvalidArgument, name)
	}
	return nil
}

func putTime(b []byte, t time.Time) {
	var v int64
	if !t.IsZero() {
		v = t.UnixNano()
	}
	binary.BigEndian.PutUint64(b, uint64(v))
}

func getTime(b []byte) time.Time {
	v := int64(binary.BigEndian.Uint64(b))
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v)
}

func encodedSize(m *Message) int {
	n := recordHeaderSize + binary.MaxVarintLen64
	str := func(s string) { n += binary.MaxVarintLen64 + len(s) }
	str(m.ID)
	str(m.Tag)
	n += binary.MaxVarintLen64
	for _, k := range m.Keys {
		str(k)
	}
	n += binary.MaxVarintLen64
	for k, v := range m.Properties {
		str(k)
		str(v)
	}
	n += binary.MaxVarintLen64
	for k, v := range m.sys {
		str(k)
		str(v)
	}
	n += binary.MaxVarintLen64 + len(m.Body)
	return n
}

// encodeRecord encodes m. The stored-at slot and checksum are filled by sealRecord.
// id and born replace m.ID and m.BornAt so the caller's message is not modified.
// m and born must pass checkRecord: the record is then decoded as m was.
func encodeRecord(m *Message, id string, born time.Time) []byte {
	b := make([]byte, recordHeaderSize, encodedSize(m)+len(id))
	b[0] = recordVersion
	putTime(b[13:], born)
	putTime(b[21:], m.DeliverAt)
	putTime(b[29:], m.ExpiresAt)
	b = binary.AppendUvarint(b, uint64(m.Attempt))
	b = appendString(b, id)
	b = appendString(b, m.Tag)
	b = binary.AppendUvarint(b, uint64(len(m.Keys)))
	for _, k := range m.Keys {
		b = appendString(b, k)
	}
	b = appendMap(b, m.Properties)
	b = appendMap(b, m.sys)
	b = binary.AppendUvarint(b, uint64(len(m.Body)))
	b = append(b, m.Body...)
	return b
}

// sealRecord stamps the stored-at time and the checksum.
func sealRecord(b []byte, storedAt time.Time) {
	putTime(b[storedAtPos:], storedAt)
	binary.BigEndian.PutUint32(b[1:5], crc32.Checksum(b[5:], castagnoli))
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendMap(b []byte, m map[string]string) []byte {
	b = binary.AppendUvarint(b, uint64(len(m)))
	for k, v := range m {
		b = appendString(b, k)
		b = appendString(b, v)
	}
	return b
}

// decodeRecord decodes a sealed record into a new Message (topic, queue and
// offset are not in the record). Any damage gives an error wrapping ErrCorrupt.
func decodeRecord(b []byte) (*Message, error) {
	m := new(Message)
	if err := decodeRecordTo(m, b); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeRecordTo is decodeRecord into m, which must be zero; after an error
// m holds part of the record and is to be discarded.
func decodeRecordTo(m *Message, b []byte) error {
	if len(b) < recordHeaderSize {
		return fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(b))
	}
	if b[0] != recordVersion {
		return fmt.Errorf("%w: unknown record version %d", ErrCorrupt, b[0])
	}
	if binary.BigEndian.Uint32(b[1:5]) != crc32.Checksum(b[5:], castagnoli) {
		return fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	m.StoredAt = getTime(b[5:])
	m.BornAt = getTime(b[13:])
	m.DeliverAt = getTime(b[21:])
	m.ExpiresAt = getTime(b[29:])
	d := decoder{b: b[recordHeaderSize:]}
	m.Attempt = int(d.uvarint(1 << 30))
	m.ID = d.str()
	m.Tag = d.str()
	if n := d.uvarint(uint64(len(d.b))); n > 0 {
		m.Keys = make([]string, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			m.Keys = append(m.Keys, d.str())
		}
	}
	m.Properties = d.strMap()
	m.sys = d.strMap()
	if body := d.bytes(); len(body) > 0 {
		m.Body = body // an empty body decodes as nil
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(d.b))
	}
	return d.err
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint(limit uint64) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = fmt.Errorf("%w: bad varint", ErrCorrupt)
		return 0
	}
	if v > limit {
		d.err = fmt.Errorf("%w: value %d over limit %d", ErrCorrupt, v, limit)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint(uint64(len(d.b)))
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = fmt.Errorf("%w: length %d beyond record", ErrCorrupt, n)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string { return string(d.bytes()) }

func (d *decoder) strMap() map[string]string {
	n := d.uvarint(uint64(len(d.b)))
	if n == 0 || d.err != nil {
		return nil
	}
	m := make(map[string]string, min(n, 64))
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := d.str()
		m[k] = d.str()
	}
	return m
}
