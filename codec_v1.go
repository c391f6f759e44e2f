package equeue

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"
)

// Record layout, version 1: what engines before the compact format (version
// 2, codec.go) wrote. It is still read, and a version-1 record moved by the
// delay scheduler is resealed as it is. Numbers are big-endian or uvarint.
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
	recordVersion1    = 1
	recordHeaderSize1 = 37
	storedAtPos1      = 5
)

func putTime(b []byte, t time.Time) {
	var v int64
	if !t.IsZero() {
		v = t.UnixNano()
	}
	binary.BigEndian.PutUint64(b, uint64(v))
}

func getTime(b []byte) time.Time {
	return timeOf(int64(binary.BigEndian.Uint64(b)))
}

// timeOf is the time of unix nanoseconds v, with 0 meaning none.
func timeOf(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.Unix(0, v)
}

// sealRecordV1 stamps the stored-at time and the checksum of a version-1 record.
func sealRecordV1(b []byte, storedAt time.Time) {
	if len(b) < recordHeaderSize1 {
		return // not a record: decoding reports it
	}
	putTime(b[storedAtPos1:], storedAt)
	binary.BigEndian.PutUint32(b[1:5], crc32.Checksum(b[5:], castagnoli))
}

// decodeRecordV1 decodes a version-1 record into m, which must be zero.
func decodeRecordV1(m *Message, b []byte) error {
	if len(b) < recordHeaderSize1 {
		return fmt.Errorf("%w: %d bytes, shorter than a version-1 header", ErrCorrupt, len(b))
	}
	if binary.BigEndian.Uint32(b[1:5]) != crc32.Checksum(b[5:], castagnoli) {
		return fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	m.StoredAt = getTime(b[5:])
	m.BornAt = getTime(b[13:])
	m.DeliverAt = getTime(b[21:])
	m.ExpiresAt = getTime(b[29:])
	d := decoder{b: b[recordHeaderSize1:]}
	m.Attempt = int(d.uvarint(maxRecordAttempt + 1))
	m.ID = d.str()
	m.Tag = d.str()
	if n := d.uvarint(uint64(len(d.b))); n > 0 {
		m.Keys = make([]string, 0, min(n, keysAhead))
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
