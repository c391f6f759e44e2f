package kafka

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"slices"
	"strconv"
	"strings"

	"github.com/equeue-go/equeue"
)

// recordMarks makes and checks the marks that end the message IDs of an
// idempotent producer's records (setIDs): an HMAC-SHA256 of the topic
// and the ID before it, keyed with Options.ProducerRecordKey. The engine
// keeps a native producer's message ID as given, so the ID alone does not
// tell the listener's records from a native message named like them;
// taken for the producer's, such a message moved the state rebuilt after
// a restart (conn.rebuild) to a later sequence number or epoch, and the
// producer's next batch was refused. A message without a valid mark is
// not read as the producer's record, unless it is one a listener before
// marks, or before the key, stored (legacyRecord).
type recordMarks struct {
	key []byte
	// builtIn is defaultRecordKey when key is another: the key a
	// listener without Options.ProducerRecordKey marked its records with.
	builtIn []byte
}

// defaultRecordKey keys the marks when Options.ProducerRecordKey is empty.
// It is no secret: a mark then keeps out IDs given by chance, not one
// made on purpose.
var defaultRecordKey = []byte("equeue kafka listener: idempotent producer records")

// markLen is how many bytes of the HMAC a mark holds (twice as many hex
// digits in the ID).
const markLen = 8

func newRecordMarks(key []byte) recordMarks {
	if len(key) == 0 || hmac.Equal(key, defaultRecordKey) {
		return recordMarks{key: defaultRecordKey}
	}
	return recordMarks{key: slices.Clone(key), builtIn: defaultRecordKey}
}

// marker makes and checks marks under one key, for one goroutine: it
// keeps its hash and buffers from one record to the next, so that a mark
// costs no allocation (setIDs allocates only each ID).
type marker struct {
	h hash.Hash
	// builtIn is the hash of recordMarks.builtIn, nil without one.
	builtIn hash.Hash
	buf     []byte
	out     [sha256.Size]byte
}

// mac returns a marker of k's key, for one goroutine.
func (k recordMarks) mac() *marker {
	mk := &marker{h: hmac.New(sha256.New, k.key)}
	if k.builtIn != nil {
		mk.builtIn = hmac.New(sha256.New, k.builtIn)
	}
	return mk
}

// named returns the start of what sum hashes for a record of topic: the
// caller appends the record's name (an ID without its mark) to it.
func (mk *marker) named(topic string) []byte {
	buf := strconv.AppendInt(mk.buf[:0], int64(len(topic)), 10)
	buf = append(buf, ':')
	return append(buf, topic...)
}

// sum is the HMAC of msg (named, then the record's name), cut to markLen
// bytes; it holds until the marker's next use.
func (mk *marker) sum(msg []byte) []byte { return mk.sumWith(mk.h, msg) }

// sumWith is sum under h's key.
func (mk *marker) sumWith(h hash.Hash, msg []byte) []byte {
	mk.buf = msg[:0] // its room is kept for the next record
	h.Reset()
	h.Write(msg)
	return h.Sum(mk.out[:0])[:markLen]
}

// marked returns name, a record's ID without its mark, with its mark,
// sum, in one allocation.
func marked(name, sum []byte) string {
	var hexed [2 * markLen]byte
	hex.Encode(hexed[:], sum)
	var id strings.Builder
	id.Grow(len(name) + 1 + len(hexed))
	id.Write(name)
	id.WriteByte('-')
	id.Write(hexed[:])
	return id.String()
}

// unmark returns id, read from topic, without its mark, and whether the
// mark is the one the listener gives it: the listener stored the record.
// builtIn says the mark is instead the one the built-in key gives, when
// the listener has another (a listener before the key stored the record,
// or a native producer gave the ID: legacyRecord tells). An ID without a
// mark is returned whole.
func (mk *marker) unmark(topic, id string) (name string, marked, builtIn bool) {
	i := strings.LastIndexByte(id, '-')
	if i < 0 || len(id)-i-1 != 2*markLen {
		return id, false, false
	}
	var got [markLen]byte
	if _, err := hex.Decode(got[:], []byte(id[i+1:])); err != nil {
		return id, false, false
	}
	name = id[:i]
	msg := append(mk.named(topic), name...)
	if hmac.Equal(got[:], mk.sum(msg)) {
		return name, true, false
	}
	return name, false, mk.builtIn != nil && hmac.Equal(got[:], mk.sumWith(mk.builtIn, msg))
}

// producerRecord parses m, read from partition part of topic, as a record
// of the producer whose IDs start with prefix: named says its ID (its
// mark aside) reads as one of the producer's, of that epoch and sequence
// number; own says the listener stored it (a valid mark, or none below
// legacyBelow: legacyRecord; and nothing a Kafka record cannot carry:
// listenerShaped), so that it can be trusted.
func producerRecord(mk *marker, topic, prefix string, part int32, m *equeue.Message, legacyBelow int64) (epoch int16, seq int32, named, own bool) {
	name, marked, builtIn := mk.unmark(topic, m.ID)
	epoch, seq, named = producerSeqOf(name, prefix, part)
	if !named && !marked && !builtIn {
		// Named as a listener before marks named its records?
		epoch, seq, named = producerSeqOf(m.ID, prefix, part)
		name = m.ID
	}
	trusted := marked || legacyRecord(name == m.ID || builtIn, m, legacyBelow)
	return epoch, seq, named, named && trusted && listenerShaped(m)
}

// ownProducer returns the producer of m, read from partition part of
// topic, when the listener stored it for an idempotent producer
// (producerRecord), and whether its ID carries a mark.
func ownProducer(mk *marker, topic string, part int32, m *equeue.Message, legacyBelow int64) (pid int64, marked, ok bool) {
	name, marked, builtIn := mk.unmark(topic, m.ID)
	if !marked && !builtIn {
		name = m.ID
	}
	if !listenerShaped(m) || !marked && !legacyRecord(name == m.ID || builtIn, m, legacyBelow) {
		return 0, false, false
	}
	pid, ok = producerOf(name, part)
	return pid, marked, ok
}

// legacyRecord reports whether m is a record a listener before marks, or
// before Options.ProducerRecordKey, stored: its ID has no mark, or the
// built-in key's (unkeyed), and m lies below legacyBelow, the partition's first record
// marked, or where the listener found none, the end of the partition
// when it first read it (partScan.legacyBelow). Such a listener's
// records are read back, so that the retry of a batch it stored, whose
// answer the restart into marks lost, is acknowledged where it is, not
// stored again; a record without a mark stored after a marked one, or
// after the listener read the partition, is a native message, and is
// not. A mark of the built-in key proves no more than none does (anyone
// may make it), so such records are read back where, and only where,
// records without a mark are: a listener given a key reads the retry of
// a batch it stored before it had one.
func legacyRecord(unkeyed bool, m *equeue.Message, legacyBelow int64) bool {
	return unkeyed && m.Offset < legacyBelow
}
