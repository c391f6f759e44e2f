package store

import (
	"encoding/binary"
	"fmt"
)

// Key layout. Records and metadata live in disjoint key spaces told apart by
// the first byte, so no metadata key, whatever its bytes, can be mistaken for
// a record or collide with one:
//
//	records:  'm' | topic uint32 BE | queue uint32 BE | offset uint64 BE   (17 bytes)
//	metadata: 'x' | caller's key
//	end mark: 'e' | topic uint32 BE | queue uint32 BE                      (9 bytes)
//
// A record key holds a segment: the records of a run of consecutive
// offsets starting at the key's offset (segment.go). An end mark holds
// where a queue whose segments go to the value log ends (badger_endmark.go).
//
// Record keys have a fixed width, so the 9-byte queue prefix of one queue is
// never a prefix of another queue's keys, and big-endian offsets sort in
// numeric order.
const (
	recordSpace    byte = 'm'
	metaSpace      byte = 'x'
	endSpace       byte = 'e'
	queuePrefixLen      = 1 + 4 + 4
	recordKeyLen        = queuePrefixLen + 8
)

func appendQueuePrefix(dst []byte, q QueueID) []byte {
	dst = append(dst, recordSpace)
	dst = binary.BigEndian.AppendUint32(dst, q.Topic)
	return binary.BigEndian.AppendUint32(dst, q.Queue)
}

func queuePrefix(q QueueID) []byte {
	return appendQueuePrefix(make([]byte, 0, recordKeyLen), q)
}

func appendRecordKey(dst []byte, q QueueID, off uint64) []byte {
	return binary.BigEndian.AppendUint64(appendQueuePrefix(dst, q), off)
}

func recordKey(q QueueID, off uint64) []byte {
	return appendRecordKey(make([]byte, 0, recordKeyLen), q, off)
}

// recordOffset decodes the offset of a record key found under a queue prefix.
func recordOffset(key []byte) (uint64, error) {
	if len(key) != recordKeyLen {
		return 0, fmt.Errorf("store: corrupt record key %x: length %d, want %d", key, len(key), recordKeyLen)
	}
	return binary.BigEndian.Uint64(key[queuePrefixLen:]), nil
}

func metaKey(k []byte) []byte {
	out := make([]byte, 0, 1+len(k))
	return append(append(out, metaSpace), k...)
}

// parseRecordKey returns the queue and first offset of a record key (zero
// values for a key of another width).
func parseRecordKey(k []byte) (QueueID, uint64) {
	if len(k) != recordKeyLen || k[0] != recordSpace {
		return QueueID{}, 0
	}
	return QueueID{Topic: binary.BigEndian.Uint32(k[1:]), Queue: binary.BigEndian.Uint32(k[5:])},
		binary.BigEndian.Uint64(k[queuePrefixLen:])
}
