package remote

import (
	"fmt"
	"time"
	"unicode/utf8"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/equeue-go/equeue"
)

// A client encodes its appends itself, straight from the engine's types:
// through protobuf, each message of an append cost a wire message filled
// from it, then protobuf's reflection to size and write it, and each
// pipelined append its size computed once more to pack it. The bytes are
// those protobuf writes (same fields, same order, map entries with both
// key and value), so the broker reads them as before. An append protobuf
// would refuse to encode (a string that is not UTF-8) is left to protobuf,
// which refuses it as before.

// wireEncoder is a request the codec (codec.go) sends as it encoded
// itself, instead of marshalling a protobuf message.
type wireEncoder interface {
	wireBuffers() mem.BufferSlice
}

// rawRequest is an encoded request; each send of it (a retried call is
// sent again) sends the same bytes.
type rawRequest []byte

func (r rawRequest) wireBuffers() mem.BufferSlice { return mem.BufferSlice{mem.SliceBuffer(r)} }

// pooledRequest is an encoded request in a buffer of bufferPool, which
// gRPC returns there once it is sent; it is sent at most once.
type pooledRequest struct{ buf *[]byte }

func (r pooledRequest) wireBuffers() mem.BufferSlice {
	return mem.BufferSlice{mem.NewBuffer(r.buf, bufferPool)}
}

// Field numbers of AppendRequest, StreamAppend and AppendStreamRequest,
// and of Message and Duration not named in pullwire.go (equeue.proto).
const (
	appendTopic    = 1
	appendQueue    = 2
	appendMessages = 3
	appendSync     = 4
	appendInterval = 5

	itemSeq    = 1
	itemAppend = 2

	requestAppends = 1

	msgDelay = 15
	msgTTL   = 16

	durationSeconds = 1
	durationNanos   = 2
)

// encodeAppend encodes req as an AppendRequest; ok is false when
// protobuf must (a string is not UTF-8). Its errors are messagesToPB's and
// syncToPB's, in their order.
func encodeAppend(req *equeue.AppendRequest) (wire []byte, ok bool, err error) {
	return encodeAppendIn(req, nil)
}

// encodeAppendIn is encodeAppend with the bytes in a buffer of slab
// (a nil slab allocates them).
func encodeAppendIn(req *equeue.AppendRequest, slab *wireSlab) (wire []byte, ok bool, err error) {
	for i, m := range req.Messages {
		if m == nil {
			return nil, false, fmt.Errorf("%w: message %d is nil", equeue.ErrInvalidArgument, i)
		}
		if err := wireTimes(i, m); err != nil {
			return nil, false, err
		}
	}
	sync, every, err := syncToPB(req.Sync)
	if err != nil {
		return nil, false, err
	}
	if !utf8.ValidString(req.Topic) {
		return nil, false, nil
	}
	type sized struct {
		size int
		sys  map[string]string
	}
	var one [1]sized
	parts := one[:0]
	if len(req.Messages) > 1 {
		parts = make([]sized, 0, len(req.Messages))
	}
	size := stringSize(appendTopic, req.Topic) + varintSize(appendQueue, int64(toInt32(req.Queue))) +
		varintSize(appendSync, int64(sync))
	if every != nil {
		size += protowire.SizeTag(appendInterval) + protowire.SizeBytes(durationSize(every.Seconds, every.Nanos))
	}
	for _, m := range req.Messages {
		sys := m.SysProperties()
		n, ok := messageSize(m, sys)
		if !ok {
			return nil, false, nil
		}
		parts = append(parts, sized{n, sys})
		size += protowire.SizeTag(appendMessages) + protowire.SizeBytes(n)
	}
	b := slab.take(size)
	b = appendString(b, appendTopic, req.Topic)
	b = appendVarint(b, appendQueue, int64(toInt32(req.Queue)))
	for i, m := range req.Messages {
		b = protowire.AppendTag(b, appendMessages, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(parts[i].size))
		b = appendMessage(b, m, parts[i].sys)
	}
	b = appendVarint(b, appendSync, int64(sync))
	if every != nil {
		b = protowire.AppendTag(b, appendInterval, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(durationSize(every.Seconds, every.Nanos)))
		b = appendDuration(b, every.Seconds, every.Nanos)
	}
	if len(b) != size {
		return nil, false, nil // cannot happen: sizes and writes agree
	}
	return b, true, nil
}

// expiresNanos is m's expiry on the wire: none beyond 2262, as the
// engine's "never" (messagesToPB).
func expiresNanos(m *equeue.Message) int64 {
	if m.ExpiresAt.After(maxWireTime) {
		return 0
	}
	return nanos(m.ExpiresAt)
}

// durationParts splits d as durationpb.New does.
func durationParts(d time.Duration) (int64, int32) {
	n := d.Nanoseconds()
	secs := n / 1e9
	return secs, int32(n - secs*1e9)
}

// messageSize is the encoded size of m, with sys its engine-owned
// properties; false when a string is not UTF-8.
func messageSize(m *equeue.Message, sys map[string]string) (int, bool) {
	if !utf8.ValidString(m.ID) || !utf8.ValidString(m.Topic) || !utf8.ValidString(m.Tag) {
		return 0, false
	}
	n := stringSize(msgID, m.ID) + stringSize(msgTopic, m.Topic) + stringSize(msgTag, m.Tag)
	for _, k := range m.Keys {
		if !utf8.ValidString(k) {
			return 0, false
		}
		n += protowire.SizeTag(msgKeys) + protowire.SizeBytes(len(k))
	}
	for _, mp := range []struct {
		num protowire.Number
		m   map[string]string
	}{{msgProps, m.Properties}, {msgSysProps, sys}} {
		if len(mp.m) == 0 {
			continue // ranging over even an empty map costs an iterator
		}
		for k, v := range mp.m {
			if !utf8.ValidString(k) || !utf8.ValidString(v) {
				return 0, false
			}
			n += protowire.SizeTag(mp.num) + protowire.SizeBytes(entrySize(k, v))
		}
	}
	if len(m.Body) > 0 {
		n += protowire.SizeTag(msgBody) + protowire.SizeBytes(len(m.Body))
	}
	n += varintSize(msgBornAt, nanos(m.BornAt)) + varintSize(msgStoredAt, nanos(m.StoredAt)) +
		varintSize(msgDeliverAt, nanos(m.DeliverAt)) + varintSize(msgExpiresAt, expiresNanos(m)) +
		varintSize(msgQueue, int64(toInt32(m.Queue))) + varintSize(msgOffset, m.Offset) +
		varintSize(msgAttempt, int64(toInt32(m.Attempt)))
	for _, d := range []struct {
		num protowire.Number
		d   time.Duration
	}{{msgDelay, m.Delay}, {msgTTL, m.TTL}} {
		if d.d != 0 {
			n += protowire.SizeTag(d.num) + protowire.SizeBytes(durationSize(durationParts(d.d)))
		}
	}
	return n, true
}

// appendMessage appends m's fields, as messageSize counted them.
func appendMessage(b []byte, m *equeue.Message, sys map[string]string) []byte {
	b = appendString(b, msgID, m.ID)
	b = appendString(b, msgTopic, m.Topic)
	b = appendString(b, msgTag, m.Tag)
	for _, k := range m.Keys {
		b = protowire.AppendTag(b, msgKeys, protowire.BytesType)
		b = protowire.AppendString(b, k)
	}
	b = appendMap(b, msgProps, m.Properties)
	if len(m.Body) > 0 {
		b = protowire.AppendTag(b, msgBody, protowire.BytesType)
		b = protowire.AppendBytes(b, m.Body)
	}
	b = appendVarint(b, msgBornAt, nanos(m.BornAt))
	b = appendVarint(b, msgStoredAt, nanos(m.StoredAt))
	b = appendVarint(b, msgDeliverAt, nanos(m.DeliverAt))
	b = appendVarint(b, msgExpiresAt, expiresNanos(m))
	b = appendVarint(b, msgQueue, int64(toInt32(m.Queue)))
	b = appendVarint(b, msgOffset, m.Offset)
	b = appendVarint(b, msgAttempt, int64(toInt32(m.Attempt)))
	b = appendMap(b, msgSysProps, sys)
	for _, d := range []struct {
		num protowire.Number
		d   time.Duration
	}{{msgDelay, m.Delay}, {msgTTL, m.TTL}} {
		if d.d != 0 {
			secs, ns := durationParts(d.d)
			b = protowire.AppendTag(b, d.num, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(durationSize(secs, ns)))
			b = appendDuration(b, secs, ns)
		}
	}
	return b
}

func stringSize(num protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeBytes(len(s))
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// varintSize and appendVarint write an integer field (int32 fields sign
// extended, as protobuf does), nothing for zero.
func varintSize(num protowire.Number, v int64) int {
	if v == 0 {
		return 0
	}
	return protowire.SizeTag(num) + protowire.SizeVarint(uint64(v))
}

func appendVarint(b []byte, num protowire.Number, v int64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(v))
}

// entrySize is the size of a map entry: key and value are always written.
func entrySize(k, v string) int {
	return protowire.SizeTag(1) + protowire.SizeBytes(len(k)) + protowire.SizeTag(2) + protowire.SizeBytes(len(v))
}

func appendMap(b []byte, num protowire.Number, m map[string]string) []byte {
	if len(m) == 0 {
		return b // ranging over even an empty map costs an iterator
	}
	for k, v := range m {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(entrySize(k, v)))
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, k)
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, v)
	}
	return b
}

func durationSize(secs int64, ns int32) int {
	return varintSize(durationSeconds, secs) + varintSize(durationNanos, int64(ns))
}

func appendDuration(b []byte, secs int64, ns int32) []byte {
	b = appendVarint(b, durationSeconds, secs)
	return appendVarint(b, durationNanos, int64(ns))
}

// streamItemSize is the size of a StreamAppend of seq and an append of
// n encoded bytes.
func streamItemSize(seq uint64, n int) int {
	s := protowire.SizeTag(itemAppend) + protowire.SizeBytes(n)
	if seq != 0 {
		s += protowire.SizeTag(itemSeq) + protowire.SizeVarint(seq)
	}
	return s
}

// streamItem is one append of an AppendStream request.
type streamItem struct {
	seq  uint64
	wire []byte
}

// encodeStreamRequest encodes an AppendStreamRequest of items into a
// buffer of bufferPool.
func encodeStreamRequest(items []streamItem) pooledRequest {
	size := 0
	for _, it := range items {
		size += protowire.SizeTag(requestAppends) + protowire.SizeBytes(streamItemSize(it.seq, len(it.wire)))
	}
	buf := bufferPool.Get(size)
	b := (*buf)[:0]
	for _, it := range items {
		b = protowire.AppendTag(b, requestAppends, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(streamItemSize(it.seq, len(it.wire))))
		if it.seq != 0 {
			b = protowire.AppendTag(b, itemSeq, protowire.VarintType)
			b = protowire.AppendVarint(b, it.seq)
		}
		b = protowire.AppendTag(b, itemAppend, protowire.BytesType)
		b = protowire.AppendBytes(b, it.wire)
	}
	*buf = b
	return pooledRequest{buf: buf}
}

// appendRequest is req for the wire: encoded by encodeAppend, or as a
// protobuf message when encodeAppend leaves it to protobuf.
func appendRequest(req *equeue.AppendRequest) (any, error) {
	wire, ok, err := encodeAppend(req)
	if err != nil {
		return nil, err
	}
	if ok {
		return rawRequest(wire), nil
	}
	return appendToWire(req)
}
