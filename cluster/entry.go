package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/equeue-go/equeue/store"
)

// Raft entries. Every change of a node's store is one Raft entry, applied
// by the FSM (fsm.go) in log order on every node:
//
//	entryTenure  a leader starts serving: its tenure, node ID, client address
//	             and, when it has one, its Kafka address
//	entryBatch   one engine write (store.Batch): one group commit of the writer
//	entryDelete  store.DeleteRange of one queue (retention, trims)
//	entryDrop    store.DropQueue (a deleted topic's queues)
//	entryLimits  the write limits of the leader's store, which its tenure's
//	             writes keep to: a node whose store takes less stops at it
//	             (fsm.go, checkLimits), before a write it could not take
//
// A tenure is one period in which one engine on the leader writes. The
// engine assigns offsets from its memory, which is right only while no other
// engine wrote since it opened, so write entries carry their tenure and the
// FSM ignores those of a tenure other than the last one started: a deposed
// leader's late entries can never land on top of its successor's.
//
// Encoding: kind byte, tenure uint64 big-endian, then the kind's body.
type entryKind uint8

const (
	entryTenure entryKind = iota + 1
	entryBatch
	entryDelete
	entryDrop
	// entryLimits follows a tenure entry: a kind of its own, so that nodes
	// of a version before it skip it (an entry they cannot decode) and
	// still read the tenure entry.
	entryLimits
)

// entry is one decoded Raft entry.
type entry struct {
	kind   entryKind
	tenure uint64

	// entryTenure
	nodeID, clientAddr, kafkaAddr string
	// entryBatch
	batch *store.Batch
	// entryDelete, entryDrop
	queue    store.QueueID
	from, to uint64
	// entryLimits
	limits store.Limits
}

// errBadEntry is returned when a Raft entry does not decode.
var errBadEntry = errors.New("cluster: bad raft entry")

func appendHeader(b []byte, k entryKind, tenure uint64) []byte {
	b = append(b, byte(k))
	return binary.BigEndian.AppendUint64(b, tenure)
}

func appendBytes(b, v []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(v)))
	return append(b, v...)
}

// encodeTenure writes the Kafka address only when there is one, so a
// cluster without Kafka listeners writes the tenure entries it always did
// (which older versions read).
func encodeTenure(tenure uint64, nodeID, clientAddr, kafkaAddr string) []byte {
	b := appendHeader(nil, entryTenure, tenure)
	b = appendBytes(b, []byte(nodeID))
	b = appendBytes(b, []byte(clientAddr))
	if kafkaAddr != "" {
		b = appendBytes(b, []byte(kafkaAddr))
	}
	return b
}

func encodeBatch(tenure uint64, sb *store.Batch) []byte {
	size := 9 + 2*binary.MaxVarintLen64
	for i := range sb.Entries {
		size += 8 + 2*binary.MaxVarintLen64 + len(sb.Entries[i].Value)
	}
	for i := range sb.Meta {
		size += 1 + 2*binary.MaxVarintLen64 + len(sb.Meta[i].Key) + len(sb.Meta[i].Value)
	}
	b := appendHeader(make([]byte, 0, size), entryBatch, tenure)
	b = binary.AppendUvarint(b, uint64(len(sb.Entries)))
	for i := range sb.Entries {
		e := &sb.Entries[i]
		b = binary.BigEndian.AppendUint32(b, e.Queue.Topic)
		b = binary.BigEndian.AppendUint32(b, e.Queue.Queue)
		b = binary.AppendUvarint(b, e.Offset)
		b = appendBytes(b, e.Value)
	}
	b = binary.AppendUvarint(b, uint64(len(sb.Meta)))
	for i := range sb.Meta {
		m := &sb.Meta[i]
		var del byte
		if m.Delete {
			del = 1
		}
		b = append(b, del)
		b = appendBytes(b, m.Key)
		b = appendBytes(b, m.Value)
	}
	return b
}

// encodeLimits writes the limits of the store of the leader of tenure.
func encodeLimits(tenure uint64, l store.Limits) []byte {
	return appendLimits(appendHeader(nil, entryLimits, tenure), l)
}

func appendLimits(b []byte, l store.Limits) []byte {
	for _, v := range []int{l.MaxEntries, l.MaxBytes, l.ValueThreshold, l.MaxValueSize} {
		b = binary.AppendUvarint(b, uint64(v))
	}
	return b
}

// limits reads what appendLimits wrote.
func (d *decoder) limits() store.Limits {
	var l store.Limits
	for _, f := range []*int{&l.MaxEntries, &l.MaxBytes, &l.ValueThreshold, &l.MaxValueSize} {
		v := d.uvarint("limits")
		if v > math.MaxInt32 {
			d.fail("limits")
		}
		*f = int(v)
	}
	return l
}

func encodeRange(k entryKind, tenure uint64, q store.QueueID, from, to uint64) []byte {
	b := appendHeader(make([]byte, 0, 9+8+2*binary.MaxVarintLen64), k, tenure)
	b = binary.BigEndian.AppendUint32(b, q.Topic)
	b = binary.BigEndian.AppendUint32(b, q.Queue)
	b = binary.AppendUvarint(b, from)
	return binary.AppendUvarint(b, to)
}

// decoder reads an entry body, remembering the first failure.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errBadEntry, what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) u32(what string) uint32 {
	if d.err != nil || len(d.b) < 4 {
		d.fail(what)
		return 0
	}
	v := binary.BigEndian.Uint32(d.b)
	d.b = d.b[4:]
	return v
}

func (d *decoder) byte1(what string) byte {
	if d.err != nil || len(d.b) < 1 {
		d.fail(what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// bytes returns a slice of the entry's buffer (not a copy).
func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// count reads a number of items each at least min bytes long, refusing
// counts the rest of the entry cannot hold.
func (d *decoder) count(what string, min int) int {
	n := d.uvarint(what)
	if d.err == nil && n > uint64(len(d.b)/min) {
		d.fail(what)
		return 0
	}
	return int(n)
}

// decodeEntry decodes a Raft entry's data. Byte slices of the result point
// into data.
func decodeEntry(data []byte) (*entry, error) {
	return decodeEntryInto(data, &store.Batch{})
}

// decodeEntryInto is decodeEntry decoding a batch entry into sb, whose
// slices it reuses: the result is valid until sb is decoded into again.
func decodeEntryInto(data []byte, sb *store.Batch) (*entry, error) {
	if len(data) < 9 {
		return nil, fmt.Errorf("%w: %d bytes", errBadEntry, len(data))
	}
	e := &entry{kind: entryKind(data[0]), tenure: binary.BigEndian.Uint64(data[1:9])}
	d := &decoder{b: data[9:]}
	switch e.kind {
	case entryTenure:
		e.nodeID = string(d.bytes("node id"))
		e.clientAddr = string(d.bytes("client address"))
		if d.err == nil && len(d.b) > 0 {
			e.kafkaAddr = string(d.bytes("kafka address"))
		}
	case entryBatch:
		clear(sb.Entries)
		clear(sb.Meta)
		sb.Entries, sb.Meta = sb.Entries[:0], sb.Meta[:0]
		if n := d.count("entry count", 10); n > 0 {
			sb.Entries = slices.Grow(sb.Entries, n)[:n]
		}
		for i := range sb.Entries {
			en := &sb.Entries[i]
			en.Queue.Topic = d.u32("topic")
			en.Queue.Queue = d.u32("queue")
			en.Offset = d.uvarint("offset")
			en.Value = d.bytes("value")
		}
		if n := d.count("meta count", 3); n > 0 {
			sb.Meta = slices.Grow(sb.Meta, n)[:n]
		}
		for i := range sb.Meta {
			m := &sb.Meta[i]
			switch d.byte1("meta flag") {
			case 0:
			case 1:
				m.Delete = true
			default:
				d.fail("meta flag")
			}
			m.Key = d.bytes("meta key")
			m.Value = d.bytes("meta value")
		}
		e.batch = sb
	case entryDelete, entryDrop:
		e.queue.Topic = d.u32("topic")
		e.queue.Queue = d.u32("queue")
		e.from = d.uvarint("from")
		e.to = d.uvarint("to")
	case entryLimits:
		e.limits = d.limits()
	default:
		return nil, fmt.Errorf("%w: kind %d", errBadEntry, e.kind)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return e, nil
}
