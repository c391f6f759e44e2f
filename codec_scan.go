package equeue

import (
	"encoding/binary"
	"fmt"
	"math"
)

// scanRecord checks a stored record as decodeRecordTo does, without making
// a message of it: it returns the record's tag, its expiry in Unix
// nanoseconds (0 for none) and the error decodeRecordTo would return. A
// pull whose messages a transport carries as stored (PullStored) filters
// its records with it. The tag is part of b.
func scanRecord(b []byte) (tag []byte, expires int64, err error) {
	return scanStoredRecord(b, false)
}

// scanStoredRecord is scanRecord; checked is decodeStoredRecord's.
func scanStoredRecord(b []byte, checked bool) (tag []byte, expires int64, err error) {
	return scanStoredTo(b, checked, nil)
}

// recordOrigin is the origin topic and its ID that a retry copy's system
// properties name (SysOriginTopic, SysOriginTopicID), each nil when the
// record has none. They are part of the record scanned.
type recordOrigin struct {
	topic, topicID []byte
}

// scanStoredRetry is scanStoredRecord of a retry topic's record: in the
// same walk it also finds the origin the record names, so that a pull
// that does not decode its messages (PullStored) judges the copy
// (originGone) without decoding it.
func scanStoredRetry(b []byte, checked bool) (tag []byte, expires int64, origin recordOrigin, err error) {
	tag, expires, err = scanStoredTo(b, checked, &origin)
	return tag, expires, origin, err
}

// scanStoredTo is scanStoredRecord that, with origin set, also records
// there the origin the record names.
func scanStoredTo(b []byte, checked bool, origin *recordOrigin) (tag []byte, expires int64, err error) {
	if len(b) > 0 && b[0]&recordV2Mark != 0 {
		return scanRecordV2(b, checked, origin)
	}
	// Empty, version 1 or unknown: rare enough to decode in full.
	var m Message
	if err := decodeRecordTo(&m, b, nil); err != nil {
		return nil, 0, err
	}
	if m.Tag != "" {
		tag = []byte(m.Tag)
	}
	if origin != nil {
		if v, ok := m.sys[SysOriginTopic]; ok {
			origin.topic = []byte(v)
		}
		if v, ok := m.sys[SysOriginTopicID]; ok {
			origin.topicID = []byte(v)
		}
	}
	return tag, nanos(m.ExpiresAt), nil
}

// scanRecordV2 walks a version-2 record field by field as decodeRecordV2
// does, with the same bounds, so that it fails exactly where decoding
// would. With origin set it records there the origin that the record's
// system properties name.
func scanRecordV2(b []byte, checked bool, origin *recordOrigin) (tag []byte, expires int64, err error) {
	if len(b) < recordFixedSize+storedDeltaLen {
		return nil, 0, fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(b))
	}
	if !checked && binary.BigEndian.Uint32(b[1:5]) != recordChecksum(b) {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	flags := b[0] &^ recordV2Mark
	born := int64(binary.BigEndian.Uint64(b[5:]))
	d := decoder{b: b[recordFixedSize:]}
	if flags&flagStoredDelta != 0 {
		d.b = d.b[storedDeltaLen:]
	} else {
		if len(d.b) < 8 {
			return nil, 0, fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(b))
		}
		d.b = d.b[8:]
	}
	var flags2 byte
	if flags&flagMore != 0 {
		flags2 = d.byte()
		if d.err == nil && (flags2 == 0 || flags2&^flags2Known != 0) {
			return nil, 0, fmt.Errorf("%w: bad flags %#x", ErrCorrupt, flags2)
		}
	}
	switch flags & (flagIDEngine | flagIDString) {
	case flagIDEngine:
		d.fixed(engineIDPrefixLen)
	case flagIDEngine | flagIDString:
		d.fixed(engineIDPrefixLen)
		d.uvarint(math.MaxUint64)
	case flagIDString:
		d.bytes()
	}
	if flags2&flag2Attempt != 0 {
		d.uvarint(maxRecordAttempt + 1)
	}
	if flags&flagDeliverAt != 0 {
		d.uvarint(math.MaxUint64)
	}
	if flags&flagExpiresAt != 0 {
		expires = born + unzigzag(d.uvarint(math.MaxUint64))
	}
	if flags&flagTag != 0 {
		tag = d.bytes()
	}
	if flags2&flag2Keys != 0 {
		n := d.uvarint(uint64(len(d.b)))
		for i := uint64(0); i < n && d.err == nil; i++ {
			d.bytes()
		}
	}
	if flags2&flag2Properties != 0 {
		d.skipMap()
	}
	if flags2&flag2Sys != 0 {
		if origin != nil {
			d.findOrigin(origin)
		} else {
			d.skipMap()
		}
	}
	if d.err != nil {
		return nil, 0, d.err
	}
	return tag, expires, nil
}

// findOrigin walks a map of system properties as skipMap does, and
// records in o the values of SysOriginTopic and SysOriginTopicID. A key
// stored twice is decoded as its last value, as strMap keeps it.
func (d *decoder) findOrigin(o *recordOrigin) {
	n := d.uvarint(uint64(len(d.b)))
	for i := uint64(0); i < n && d.err == nil; i++ {
		k, v := d.bytes(), d.bytes()
		if d.err != nil {
			break
		}
		switch string(k) {
		case SysOriginTopic:
			o.topic = v
		case SysOriginTopicID:
			o.topicID = v
		}
	}
}

// skipMap walks a map as strMap decodes it.
func (d *decoder) skipMap() {
	n := d.uvarint(uint64(len(d.b)))
	for i := uint64(0); i < n && d.err == nil; i++ {
		d.bytes()
		d.bytes()
	}
}
