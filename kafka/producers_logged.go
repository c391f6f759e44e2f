package kafka

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"

	"github.com/equeue-go/equeue"
)

// loggedRecord is a record rebuild read and took for an idempotent
// producer's (seqState.logged): where it is stored, and what it holds.
// Its message ID only says whose it is, and a native producer may give
// its message any ID, one reading as a Kafka producer's too: a batch is
// taken for records stored only when what they hold is what it holds
// (matches).
type loggedRecord struct {
	// at is where and when the record is stored.
	at storedAt
	// born is the record's BornAt in Unix milliseconds: the Kafka
	// record's timestamp, when it had one.
	born int64
	// sum is the recordSum of the record.
	sum [sha256.Size]byte
}

// matches reports whether l holds what m, a record of a batch being
// stored, does: its key, value, headers (as toMessage maps them) and
// timestamp. A record without a timestamp was stored with the engine's
// time, which no retry tells: its timestamp is not compared.
func (l loggedRecord) matches(m *equeue.Message) bool {
	if !m.BornAt.IsZero() && m.BornAt.UnixMilli() != l.born {
		return false
	}
	return recordSum(m) == l.sum
}

// loggedOf is the loggedRecord of m, read from the partition.
func loggedOf(m *equeue.Message) loggedRecord {
	return loggedRecord{at: storedAt{base: m.Offset, time: m.StoredAt.UnixMilli()}, born: m.BornAt.UnixMilli(), sum: recordSum(m)}
}

// recordSum is a SHA-256 of what toMessage makes of a Kafka record: the
// message's keys, tag, properties and body, each length-prefixed.
func recordSum(m *equeue.Message) [sha256.Size]byte {
	h := sha256.New()
	var buf []byte
	field := func(s []byte) {
		buf = binary.AppendUvarint(buf[:0], uint64(len(s)))
		h.Write(buf)
		h.Write(s)
	}
	buf = binary.AppendUvarint(buf[:0], uint64(len(m.Keys)))
	h.Write(buf)
	for _, k := range m.Keys {
		field([]byte(k))
	}
	field([]byte(m.Tag))
	keys := make([]string, 0, len(m.Properties))
	for k := range m.Properties {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	buf = binary.AppendUvarint(buf[:0], uint64(len(keys)))
	h.Write(buf)
	for _, k := range keys {
		field([]byte(k))
		field([]byte(m.Properties[k]))
	}
	field(m.Body)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// listenerShaped reports whether m, read from a partition, may be a
// record the listener stored: those carry no delivery time, attempt or
// system property (toMessage sets none). A message that does was stored
// by a native producer, whatever its ID says. An expiry does not tell:
// the engine gives every message sent to a topic with a DefaultTTL one,
// the listener's records too (the time of their append plus the topic's
// default then, which may have been taken off since), and a record keeps
// no mark of where its expiry came from. Taken for not the listener's,
// the records of a producer on such a topic were never read back, and
// the retry of a batch stored there was stored again. A native
// producer's message with an expiry, named as the producer's, is told
// from the producer's record by what it holds (loggedRecord.matches), as
// one without is.
func listenerShaped(m *equeue.Message) bool {
	return m.DeliverAt.IsZero() && m.Attempt == 0 && len(m.SysProperties()) == 0
}

// seqAt is the sequence number of b's record i: b's first plus i,
// wrapping from MaxInt32 to 0 (see lastSeq).
func seqAt(b *producedBatch, i int) int32 {
	s := int64(b.firstSeq) + int64(i)
	if s > math.MaxInt32 {
		s -= math.MaxInt32 + 1
	}
	return int32(s)
}
