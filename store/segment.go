package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Segments. The Badger store keeps the records of a queue in segments: one
// Badger key per run of consecutive offsets, under the record key of the
// run's first offset. A group commit that appends 64 small records to 4
// queues thus costs Badger 4 to 16 keys instead of 64, and Badger's work
// per key (transaction entry, write-ahead-log entry, skiplist node) is most
// of what a small write costs. Segments are kept below the value threshold,
// so they stay in the LSM tree like the single records they replace; a
// record too large to share a segment gets one of its own.
//
// Invariants: the segments of one queue never overlap and are never empty,
// so the first record of a queue is the first segment's first offset and
// the end is the last segment's first offset plus its count.
//
// Value layout:
//
//	version byte (1) | uvarint count | count × (uvarint length | record) | CRC-32C (4 bytes, big endian)
//
// The checksum covers everything before it. The framing does not look into
// the records: their own format (the engine's codec) carries its own
// version. A segment of a later version (one a newer store wrote before an
// older one opened the directory) is refused by segmentCount and
// decodeSegment with an error matching ErrUnsupportedFormat and naming the
// version. Every version keeps the version byte first and the checksum
// last, so that an older build tells such a segment from damage
// (newerSegmentVersion). It is not damage: Read stops before it, Bounds
// does not guess where a queue it ends goes on, and no write or deletion
// rewrites it (a deletion that covers it deletes it whole). Any other
// segment that does not decode is damaged (version 0 included).
const (
	segmentVersion byte = 1
	// segmentOverhead bounds what framing adds to one record alone in a
	// segment: version, count, a length of up to 5 bytes, checksum.
	segmentOverhead = 1 + 1 + binary.MaxVarintLen32 + 4
	// segmentRecordOverhead bounds what each further record adds.
	segmentRecordOverhead = binary.MaxVarintLen32
)

var segmentTable = crc32.MakeTable(crc32.Castagnoli)

// errSegment marks a segment value that cannot be decoded.
var errSegment = errors.New("store: corrupt segment")

// noNextSegment stands for "no segment after this one" where the first
// offset of the next segment is asked for; no segment starts there, since
// offsets are below math.MaxUint64.
const noNextSegment = math.MaxUint64

// damagedEnd returns one past the last offset that a damaged segment (one
// decodeSegment refuses) starting at start stands for, given next, the
// first offset of the segment after it (noNextSegment if none): up to its
// count when the count can be read, but not into the next segment;
// otherwise up to the next segment, but never more offsets than the value
// has bytes (every record takes at least one; a lost value: the largest
// segment's bytes), so a gap after it, as a delay log leaves, is not taken
// for records; or its first offset alone when it is the last (as queueEnd
// takes it). Read reports these offsets as records
// with no value; a write or deletion that splits the segment keeps those
// it does not touch as such records (takeOverlap, deleteChunk), so they
// read back the same and the damage never makes a write or a deletion
// fail.
func damagedEnd(start uint64, v []byte, next uint64) uint64 {
	if n, err := segmentCount(v); err == nil && start+uint64(n) > start {
		return min(start+uint64(n), next)
	}
	if next != noNextSegment {
		limit := len(v)
		if limit == 0 { // lost: no segment holds more than its largest size
			limit = maxSegmentBytes
		}
		if most := start + uint64(limit); most > start && most < next {
			return most
		}
		return next
	}
	return start + 1
}

// damagedSegment returns a segment value that stands for count offsets
// (count >= 1) and fails its checksum: segmentCount reads count, padding
// makes the value as long as that takes, and decodeSegment refuses it, so
// damagedEnd gives it count offsets (or up to the next segment) and Read
// reports them as records with no value. A snapshot carries a segment it
// cannot copy so (BadgerSnapshot.WriteTo).
func damagedSegment(count uint64) []byte {
	v := binary.AppendUvarint([]byte{segmentVersion}, count)
	if pad := int64(count) - int64(len(v)) - 4; pad > 0 {
		v = append(v, make([]byte, pad)...)
	}
	return binary.BigEndian.AppendUint32(v, ^crc32.Checksum(v, segmentTable))
}

// carriedDamage reports whether v is a damaged segment as a snapshot
// carries one (damagedSegment): damage the store was given, which it holds
// and reads back as written (VerifyRecords). Damage to a segment's own
// bytes never leaves that exact value, checksum included.
func carriedDamage(v []byte) bool {
	n, err := segmentCount(v)
	return err == nil && bytes.Equal(v, damagedSegment(uint64(n)))
}

// segmentEnd returns one past the last offset of the segment starting at
// start with value v, damaged or not (damagedEnd), and whether it is
// sound. next is as for damagedEnd.
func segmentEnd(start uint64, v []byte, next uint64) (uint64, bool) {
	if decodeSegment(v, func(int, []byte) bool { return false }) != nil {
		return damagedEnd(start, v, next), false
	}
	n, _ := segmentCount(v)
	return start + uint64(n), true
}

// damagedRecords returns, as entries with no value, the offsets of q in
// [start, end) outside [from, to): what a damaged segment over
// [start, end) keeps of its offsets when [from, to) is taken from it.
func damagedRecords(q QueueID, start, end, from, to uint64) []Entry {
	var out []Entry
	for off := start; off < end; off++ {
		if off < from || off >= to {
			out = append(out, Entry{Queue: q, Offset: off})
		}
	}
	return out
}

// encodeSegment appends the segment value framing records to dst.
func encodeSegment(dst []byte, records [][]byte) []byte {
	start := len(dst)
	dst = append(dst, segmentVersion)
	dst = binary.AppendUvarint(dst, uint64(len(records)))
	for _, r := range records {
		dst = binary.AppendUvarint(dst, uint64(len(r)))
		dst = append(dst, r...)
	}
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], segmentTable))
}

// encodeSegmentOf is encodeSegment of the values of entries.
func encodeSegmentOf(dst []byte, entries []Entry) []byte {
	start := len(dst)
	dst = append(dst, segmentVersion)
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for i := range entries {
		dst = binary.AppendUvarint(dst, uint64(len(entries[i].Value)))
		dst = append(dst, entries[i].Value...)
	}
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[start:], segmentTable))
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// segmentCount reads the record count of a segment without checking the
// rest of it.
func segmentCount(v []byte) (int, error) {
	if newerSegmentVersion(v) {
		return 0, fmt.Errorf("%w: version %d (this build reads %d)", ErrUnsupportedFormat, v[0], segmentVersion)
	}
	if len(v) < 2+4 {
		return 0, fmt.Errorf("%w: %d bytes, shorter than a header", errSegment, len(v))
	}
	if v[0] != segmentVersion {
		return 0, fmt.Errorf("%w: unknown segment version %d (this build reads %d)", errSegment, v[0], segmentVersion)
	}
	n, k := binary.Uvarint(v[1 : len(v)-4])
	if k <= 0 || n == 0 || n > uint64(len(v)) {
		return 0, fmt.Errorf("%w: bad count", errSegment)
	}
	return int(n), nil
}

// newerSegmentVersion reports whether v is a segment of a later format
// version than this build reads: a version byte above segmentVersion, and
// a value that ends, as every version's does, in the CRC-32C of the rest.
// A version byte that damage changed fails that checksum, and the segment
// is damaged, not newer.
func newerSegmentVersion(v []byte) bool {
	return len(v) > 4 && v[0] > segmentVersion &&
		binary.BigEndian.Uint32(v[len(v)-4:]) == crc32.Checksum(v[:len(v)-4], segmentTable)
}

// decodeSegment checks a segment and calls fn with each record in order;
// the record slices alias v and are capped to their own length. It stops
// early, without error, when fn returns false.
func decodeSegment(v []byte, fn func(i int, rec []byte) bool) error {
	count, err := segmentCount(v)
	if err != nil {
		return err
	}
	body := v[:len(v)-4]
	if binary.BigEndian.Uint32(v[len(v)-4:]) != crc32.Checksum(body, segmentTable) {
		return fmt.Errorf("%w: checksum mismatch", errSegment)
	}
	_, k := binary.Uvarint(body[1:])
	first := 1 + k
	// Validate the framing completely before handing out any record, so a
	// caller never sees part of a damaged segment; the second walk then
	// reads lengths known to be sound.
	p := first
	for range count {
		l, k := binary.Uvarint(body[p:])
		if k <= 0 || l > uint64(len(body)-p-k) {
			return fmt.Errorf("%w: bad record length", errSegment)
		}
		p += k + int(l)
	}
	if p != len(body) {
		return fmt.Errorf("%w: %d trailing bytes", errSegment, len(body)-p)
	}
	p = first
	for i := range count {
		l, k := binary.Uvarint(body[p:])
		p += k
		end := p + int(l)
		if !fn(i, body[p:end:end]) {
			return nil
		}
		p = end
	}
	return nil
}
