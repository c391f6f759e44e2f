package equeue

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"time"
	"unsafe"
)

// Record layout, version 2 (the compact format). Version-1 records
// (codec_v1.go) are still read; any other version is refused with
// ErrUnsupportedFormat. A version-2 record is told by the top bit of its
// first byte, whose other 7 bits are flags; a first byte below 0x80 is the
// version number of another format (1 is version 1).
//
//	[0]      0x80 | flags (below)
//	[1:5]    CRC-32C of byte 0 and bytes [5:], big endian
//	[5:13]   born-at, unix nanoseconds, big endian
//	[13:..]  stored-at (patched by the writer): with flagStoredDelta, 4 bytes
//	         of time after born-at (storedDelta); else 8 bytes of unix
//	         nanoseconds
//	then, each only when its flag says so: a second flags byte, the ID,
//	attempt (uvarint), deliver-at and expires-at (zigzag varints of
//	nanoseconds from born-at, modulo 2^64), tag, keys, properties, system
//	properties;
//	then     the body: every byte left.
//
// Strings are a uvarint length followed by the bytes; lists and maps are a
// uvarint count followed by their items. An ID of 24 lowercase hex digits
// (what the engine generates: idSource) is kept as its 12 bytes: a 4-byte
// prefix and a counter stored as the difference to born-at, which the
// engine makes 0; any other ID is a string.
//
// Empty fields thus cost nothing: a message sent with only a body costs 21
// bytes on top of it (flags, checksum, born-at, stored-at delta, ID prefix).
const (
	recordVersion     = 2
	recordV2Mark      = 0x80
	recordFixedSize   = 13 // flags, checksum, born-at
	storedDeltaLen    = 4
	storedAtPos       = recordFixedSize
	engineIDLen       = 24
	engineIDPrefixLen = 4
)

// Flags of a version-2 record, in the low 7 bits of its first byte.
const (
	// flagStoredDelta: stored-at is kept as a delta from born-at. The
	// encoder chooses it for a message whose born-at the engine set and
	// that is not delayed, so that it is written moments after born-at.
	flagStoredDelta = 1 << iota
	// flagIDEngine and flagIDString form a 2-bit ID kind: neither is no
	// ID, flagIDEngine alone an engine-shaped ID whose counter equals
	// born-at, flagIDString alone a string, both an engine-shaped ID with
	// the counter's zigzag delta from born-at following the prefix.
	flagIDEngine
	flagIDString
	flagDeliverAt
	flagExpiresAt
	flagTag
	flagMore // a second flags byte follows stored-at
)

// Flags of the second flags byte.
const (
	flag2Attempt = 1 << iota
	flag2Keys
	flag2Properties
	flag2Sys
	flags2Known = flag2Attempt | flag2Keys | flag2Properties | flag2Sys
)

// storedDelta packs d, nanoseconds from born-at to stored-at, into 32 bits:
// the top 2 bits choose the unit (ns, µs, ms, s) and the low 30 count
// whole units, the finest unit that holds d. Stored-at is thus exact to the
// nanosecond when written within 1.07 s of born-at (nearly always: the
// writer's queueing delay), to the microsecond within 17.9 minutes, to the
// millisecond within 12.4 days; d below 0 (the clock stepped back) packs as
// 0, above 34 years as the most the seconds unit holds. Rounding is down.
func storedDelta(d int64) uint32 {
	const count = 1<<30 - 1
	d = max(d, 0)
	for unit, scale := uint32(0), int64(1); unit < 4; unit, scale = unit+1, scale*1000 {
		if d/scale <= count || unit == 3 {
			return unit<<30 | uint32(min(d/scale, count))
		}
	}
	return 0 // not reached
}

// storedDeltaNanos unpacks storedDelta.
func storedDeltaNanos(v uint32) int64 {
	scale := int64(1)
	for range v >> 30 {
		scale *= 1000
	}
	return int64(v&(1<<30-1)) * scale
}

// ErrUnsupportedFormat is returned (wrapped, and together with ErrCorrupt)
// when a stored record carries a format version this build cannot read,
// such as one written by a newer version of the engine. The error names
// the version. A pull is never skipped past such a record: it stops
// before it, and a pull from its offset fails with this error.
var ErrUnsupportedFormat = errors.New("equeue: unsupported record format version")

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

// nanos is t in unix nanoseconds, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// parseEngineID returns the 12 bytes of id when it has the shape of an
// engine-generated ID: 24 lowercase hex digits.
func parseEngineID(id string) (raw [engineIDLen / 2]byte, ok bool) {
	if len(id) != engineIDLen {
		return raw, false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		var v byte
		switch {
		case c >= '0' && c <= '9':
			v = c - '0'
		case c >= 'a' && c <= 'f':
			v = c - 'a' + 10
		default:
			return raw, false
		}
		raw[i/2] |= v << (4 * (1 - i%2))
	}
	return raw, true
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// encodeRecord encodes m. The stored-at slot and checksum are filled by sealRecord.
// id and born replace m.ID and m.BornAt so the caller's message is not modified.
// m and born must pass checkRecord: the record is then decoded as m was.
func encodeRecord(m *Message, id string, born time.Time) []byte {
	raw, engineShaped := parseEngineID(id)
	return encodeRecordID(m, id, raw, engineShaped, born)
}

// encodeRecordID is encodeRecord for a caller that knows whether id is
// engine-shaped, and then its 12 bytes raw (as idSource makes them), so
// that the ID is not parsed again. The record is allocated at its exact
// length.
func encodeRecordID(m *Message, id string, raw [engineIDLen / 2]byte, engineShaped bool, born time.Time) []byte {
	return encodeRecordSpare(m, id, raw, engineShaped, born, 0)
}

// sharedIDMaxRecord is the largest record whose allocation also holds its
// new engine ID's text (encodeRecordNewID). An ID kept by the application
// keeps the whole allocation alive: the bound keeps that to at most about
// ten times the ID's own allocation, while the small records of most
// sends save one.
const sharedIDMaxRecord = 256

// encodeRecordNewID encodes m under raw, an engine ID just generated, and
// returns the record and the ID's text. For a record of at most
// sharedIDMaxRecord bytes both are one allocation: the text follows the
// record's bytes, past its capacity (appending to the record copies it),
// and nothing writes it again. Sealing writes only the record's own bytes.
func encodeRecordNewID(m *Message, raw [engineIDLen / 2]byte, born time.Time) ([]byte, string) {
	b := encodeRecordSpare(m, "", raw, true, born, engineIDLen)
	n := len(b)
	if n > sharedIDMaxRecord || cap(b)-n < engineIDLen {
		return b[:n:n], formatEngineID(raw)
	}
	text := b[n : n+engineIDLen]
	hex.Encode(text, raw[:])
	return b[:n:n], unsafe.String(unsafe.SliceData(text), engineIDLen)
}

// encodeRecordSpare is encodeRecordID with room for spare more bytes
// after the record when it is at most sharedIDMaxRecord bytes.
func encodeRecordSpare(m *Message, id string, raw [engineIDLen / 2]byte, engineShaped bool, born time.Time, spare int) []byte {
	var flags, flags2 byte
	bornNs := nanos(born)
	size := recordFixedSize + len(m.Body)
	// A stored-at delta only for messages written right after they are
	// stamped: those delayed are moved (and resealed) when due, maybe
	// long after.
	if m.BornAt.IsZero() && m.DeliverAt.IsZero() {
		flags |= flagStoredDelta
		size += storedDeltaLen
	} else {
		size += 8
	}
	var idDelta uint64 // zigzag of the ID counter's difference to born-at
	switch {
	case engineShaped: // before id == "": encodeRecordNewID passes no text
		counter := int64(binary.BigEndian.Uint64(raw[engineIDPrefixLen:]))
		size += engineIDPrefixLen
		if d := int64(uint64(counter) - uint64(bornNs)); d == 0 {
			flags |= flagIDEngine
		} else {
			flags |= flagIDEngine | flagIDString
			idDelta = zigzag(d)
			size += uvarintLen(idDelta)
		}
	case id == "":
	default:
		flags |= flagIDString
		size += stringLen(id)
	}
	if m.Attempt != 0 {
		flags2 |= flag2Attempt
		size += uvarintLen(uint64(m.Attempt))
	}
	var deliver, expires uint64 // zigzag of their differences to born-at
	if !m.DeliverAt.IsZero() {
		flags |= flagDeliverAt
		deliver = zigzag(int64(uint64(m.DeliverAt.UnixNano()) - uint64(bornNs)))
		size += uvarintLen(deliver)
	}
	if !m.ExpiresAt.IsZero() {
		flags |= flagExpiresAt
		expires = zigzag(int64(uint64(m.ExpiresAt.UnixNano()) - uint64(bornNs)))
		size += uvarintLen(expires)
	}
	if m.Tag != "" {
		flags |= flagTag
		size += stringLen(m.Tag)
	}
	if len(m.Keys) > 0 {
		flags2 |= flag2Keys
		size += uvarintLen(uint64(len(m.Keys)))
		for _, k := range m.Keys {
			size += stringLen(k)
		}
	}
	if len(m.Properties) > 0 {
		flags2 |= flag2Properties
		size += mapLen(m.Properties)
	}
	if len(m.sys) > 0 {
		flags2 |= flag2Sys
		size += mapLen(m.sys)
	}
	if flags2 != 0 {
		flags |= flagMore
		size++
	}

	room := size
	if size <= sharedIDMaxRecord {
		room += spare
	}
	b := make([]byte, recordFixedSize, room)
	b[0] = recordV2Mark | flags
	binary.BigEndian.PutUint64(b[5:], uint64(bornNs))
	if flags&flagStoredDelta != 0 {
		b = append(b, make([]byte, storedDeltaLen)...)
	} else {
		b = append(b, make([]byte, 8)...)
	}
	if flags&flagMore != 0 {
		b = append(b, flags2)
	}
	switch flags & (flagIDEngine | flagIDString) {
	case flagIDEngine:
		b = append(b, raw[:engineIDPrefixLen]...)
	case flagIDEngine | flagIDString:
		b = append(b, raw[:engineIDPrefixLen]...)
		b = binary.AppendUvarint(b, idDelta)
	case flagIDString:
		b = appendString(b, id)
	}
	if flags2&flag2Attempt != 0 {
		b = binary.AppendUvarint(b, uint64(m.Attempt))
	}
	if flags&flagDeliverAt != 0 {
		b = binary.AppendUvarint(b, deliver)
	}
	if flags&flagExpiresAt != 0 {
		b = binary.AppendUvarint(b, expires)
	}
	if flags&flagTag != 0 {
		b = appendString(b, m.Tag)
	}
	if flags2&flag2Keys != 0 {
		b = binary.AppendUvarint(b, uint64(len(m.Keys)))
		for _, k := range m.Keys {
			b = appendString(b, k)
		}
	}
	if flags2&flag2Properties != 0 {
		b = appendMap(b, m.Properties)
	}
	if flags2&flag2Sys != 0 {
		b = appendMap(b, m.sys)
	}
	return append(b, m.Body...)
}

// uvarintLen is the length of x as a uvarint.
func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// stringLen is the encoded length of s: its uvarint length and bytes.
func stringLen(s string) int { return uvarintLen(uint64(len(s))) + len(s) }

// mapLen is the encoded length of m as appendMap writes it.
func mapLen(m map[string]string) int {
	n := uvarintLen(uint64(len(m)))
	for k, v := range m {
		n += stringLen(k) + stringLen(v)
	}
	return n
}

// sealRecord stamps the stored-at time and the checksum. A stored-at kept
// as a delta from born-at is rounded as storedDelta says.
func sealRecord(b []byte, storedAt time.Time) {
	switch {
	case len(b) > 0 && b[0] == recordVersion1:
		sealRecordV1(b, storedAt)
		return
	case len(b) < recordFixedSize+storedDeltaLen || b[0]&recordV2Mark == 0:
		return // not a record this build writes: decoding reports it
	}
	if b[0]&flagStoredDelta != 0 {
		// The encoder chooses the delta form only for a born-at the engine
		// stamped (now), so the subtraction cannot overflow.
		born := int64(binary.BigEndian.Uint64(b[5:]))
		binary.BigEndian.PutUint32(b[storedAtPos:], storedDelta(nanos(storedAt)-born))
	} else if len(b) >= recordFixedSize+8 {
		binary.BigEndian.PutUint64(b[storedAtPos:], uint64(nanos(storedAt)))
	}
	binary.BigEndian.PutUint32(b[1:5], recordChecksum(b))
}

// recordChecksum is the CRC-32C of a version-2 record's byte 0 and bytes [5:].
func recordChecksum(b []byte) uint32 {
	return crc32.Update(crc32.Checksum(b[:1], castagnoli), castagnoli, b[5:])
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
// offset are not in the record). Any damage gives an error wrapping
// ErrCorrupt; an unknown version one wrapping ErrUnsupportedFormat too.
func decodeRecord(b []byte) (*Message, error) {
	m := new(Message)
	if err := decodeRecordTo(m, b, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// decodeRecordTo is decodeRecord into m, which must be zero; after an error
// m holds part of the record and is to be discarded.
// With ids set, an engine-shaped ID is left to ids, which sets it when
// flushed.
func decodeRecordTo(m *Message, b []byte, ids *idFormatter) error {
	return decodeStoredRecord(m, b, ids, false)
}

// decodeStoredRecord is decodeRecordTo; checked says the store checked b
// against a checksum of its own that covers it whole (recordsChecker), so
// the record's own checksum is not checked again.
func decodeStoredRecord(m *Message, b []byte, ids *idFormatter, checked bool) error {
	switch {
	case len(b) == 0:
		return fmt.Errorf("%w: empty record", ErrCorrupt)
	case b[0]&recordV2Mark != 0:
		return decodeRecordV2(m, b, ids, checked)
	case b[0] == recordVersion1:
		return decodeRecordV1(m, b)
	}
	return fmt.Errorf("%w: %w: version %d (this build reads versions %d and %d)",
		ErrCorrupt, ErrUnsupportedFormat, b[0], recordVersion1, recordVersion)
}

func decodeRecordV2(m *Message, b []byte, ids *idFormatter, checked bool) error {
	if len(b) < recordFixedSize+storedDeltaLen {
		return fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(b))
	}
	if !checked && binary.BigEndian.Uint32(b[1:5]) != recordChecksum(b) {
		return fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	flags := b[0] &^ recordV2Mark
	born := int64(binary.BigEndian.Uint64(b[5:]))
	m.BornAt = timeOf(born)
	d := decoder{b: b[recordFixedSize:]}
	if flags&flagStoredDelta != 0 {
		m.StoredAt = timeOf(born + storedDeltaNanos(binary.BigEndian.Uint32(d.b)))
		d.b = d.b[storedDeltaLen:]
	} else {
		if len(d.b) < 8 {
			return fmt.Errorf("%w: %d bytes, shorter than a header", ErrCorrupt, len(b))
		}
		m.StoredAt = getTime(d.b)
		d.b = d.b[8:]
	}
	var flags2 byte
	if flags&flagMore != 0 {
		flags2 = d.byte()
		if d.err == nil && (flags2 == 0 || flags2&^flags2Known != 0) {
			return fmt.Errorf("%w: bad flags %#x", ErrCorrupt, flags2)
		}
	}
	switch flags & (flagIDEngine | flagIDString) {
	case flagIDEngine:
		m.ID = ids.id(m, d.fixed(engineIDPrefixLen), born)
	case flagIDEngine | flagIDString:
		prefix := d.fixed(engineIDPrefixLen)
		m.ID = ids.id(m, prefix, born+unzigzag(d.uvarint(math.MaxUint64)))
	case flagIDString:
		m.ID = d.str()
	}
	if flags2&flag2Attempt != 0 {
		m.Attempt = int(d.uvarint(maxRecordAttempt + 1))
	}
	if flags&flagDeliverAt != 0 {
		m.DeliverAt = timeOf(born + unzigzag(d.uvarint(math.MaxUint64)))
	}
	if flags&flagExpiresAt != 0 {
		m.ExpiresAt = timeOf(born + unzigzag(d.uvarint(math.MaxUint64)))
	}
	if flags&flagTag != 0 {
		m.Tag = d.str()
	}
	if flags2&flag2Keys != 0 {
		n := d.uvarint(uint64(len(d.b)))
		m.Keys = make([]string, 0, min(n, keysAhead))
		for i := uint64(0); i < n && d.err == nil; i++ {
			m.Keys = append(m.Keys, d.str())
		}
	}
	if flags2&flag2Properties != 0 {
		m.Properties = d.strMap()
	}
	if flags2&flag2Sys != 0 {
		m.sys = d.strMap()
	}
	if d.err != nil {
		return d.err
	}
	if len(d.b) > 0 {
		m.Body = d.b[:len(d.b):len(d.b)] // an empty body decodes as nil
	}
	return nil
}

// engineID formats an engine-shaped ID from its prefix and counter.
func engineID(prefix []byte, counter int64) string {
	if len(prefix) != engineIDPrefixLen {
		return "" // the decoder has recorded the error
	}
	var raw [engineIDLen / 2]byte
	copy(raw[:], prefix)
	binary.BigEndian.PutUint64(raw[engineIDPrefixLen:], uint64(counter))
	return formatEngineID(raw)
}

// formatEngineID formats the 12 bytes of an engine-shaped ID.
func formatEngineID(raw [engineIDLen / 2]byte) string {
	var h [engineIDLen]byte
	hex.Encode(h[:], raw[:])
	return string(h[:])
}

// idFormatter formats the engine-shaped IDs of the records one read
// decodes into one string, of which each message's ID is a part: one
// allocation per read instead of one per message, which was the read
// path's most frequent one (BenchmarkPull). The parts keep the whole
// string alive, as the messages of a read share their slab.
type idFormatter struct {
	pending []pendingID
}

type pendingID struct {
	m   *Message
	raw [engineIDLen / 2]byte
}

// id returns m's ID from its prefix and counter at once when f is nil;
// otherwise it leaves it to flush and returns "".
func (f *idFormatter) id(m *Message, prefix []byte, counter int64) string {
	if f == nil || len(prefix) != engineIDPrefixLen {
		return engineID(prefix, counter)
	}
	p := pendingID{m: m}
	copy(p.raw[:], prefix)
	binary.BigEndian.PutUint64(p.raw[engineIDPrefixLen:], uint64(counter))
	f.pending = append(f.pending, p)
	return ""
}

// flush sets the IDs left to f.
func (f *idFormatter) flush() {
	if len(f.pending) == 0 {
		return
	}
	buf := make([]byte, len(f.pending)*engineIDLen)
	for i, p := range f.pending {
		hex.Encode(buf[i*engineIDLen:], p.raw[:])
	}
	all := unsafe.String(unsafe.SliceData(buf), len(buf)) // buf is not written again
	for i, p := range f.pending {
		p.m.ID = all[i*engineIDLen : (i+1)*engineIDLen]
	}
	clear(f.pending)
	f.pending = f.pending[:0]
}

// keysAhead is the most keys a decoder makes room for before it decoded
// them: a record's count of keys is bounded only by the bytes left (an
// empty key takes one), and each takes a 16-byte string, so room made for
// a damaged or hostile count would cost many times the record. More keys
// grow the room as they are decoded.
const keysAhead = 16

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

func (d *decoder) byte() byte {
	if v := d.fixed(1); v != nil {
		return v[0]
	}
	return 0
}

// fixed takes the next n bytes, or records an error and returns nil.
func (d *decoder) fixed(n int) []byte {
	if d.err != nil {
		return nil
	}
	if len(d.b) < n {
		d.err = fmt.Errorf("%w: %d bytes left, want %d", ErrCorrupt, len(d.b), n)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint(uint64(len(d.b)))
	if d.err != nil {
		return nil
	}
	return d.fixed(int(n))
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
