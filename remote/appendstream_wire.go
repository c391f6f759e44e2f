package remote

import (
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// An AppendStream answer carries, for each append, its seq and its IDs.
// Decoded by protobuf, each costs a result, a response, a slice of IDs and
// every ID, through protobuf's reflection; streamAnswers decodes the usual
// answer (no errors in it) straight into one slice of answers, and leaves
// any other to protobuf (as pullwire.go does).

// appendAnswer is the wire's answer to one append (pb.AppendResponse).
type appendAnswer struct {
	queue       int32
	firstOffset int64
	storedAt    int64
	ids         []string
	delayed     bool
	duplicate   bool
}

// answerFromPB takes resp's fields; a nil resp has none.
func answerFromPB(resp *pb.AppendResponse) appendAnswer {
	return appendAnswer{queue: resp.GetQueue(), firstOffset: resp.GetFirstOffset(), storedAt: resp.GetStoredAtUnixNano(),
		ids: resp.GetIds(), delayed: resp.GetDelayed(), duplicate: resp.GetDuplicate()}
}

// result is the answer to an append of n messages.
func (a appendAnswer) result(n int) (equeue.AppendResult, error) {
	if len(a.ids) != n {
		return equeue.AppendResult{}, errIDCount(len(a.ids), n)
	}
	return equeue.AppendResult{Queue: int(a.queue), FirstOffset: a.firstOffset, StoredAt: fromNanos(a.storedAt),
		IDs: a.ids, Delayed: a.delayed, Duplicate: a.duplicate}, nil
}

// streamAnswer is one append's outcome on an AppendStream call: err when
// it failed, else resp.
type streamAnswer struct {
	seq  uint64
	err  *pb.PullError
	resp appendAnswer
}

// streamAnswers is one message of an AppendStream call's answers.
type streamAnswers struct {
	results  []streamAnswer
	draining bool
}

var _ wireDecoder = (*streamAnswers)(nil)

// Field numbers of AppendStreamResponse, StreamAppendResult and
// AppendResponse (equeue.proto).
const (
	streamResults  = 1
	streamDraining = 2

	resultSeq      = 1
	resultResponse = 2

	answerQueue     = 1
	answerFirst     = 2
	answerStoredAt  = 3
	answerIDs       = 4
	answerDelayed   = 5
	answerDuplicate = 6
)

// decodeWire decodes the answers b. Bytes protobuf cannot decode fail the
// call, as they would with the generated stream.
func (a *streamAnswers) decodeWire(b []byte) error {
	if a.decodeFast(b) {
		return nil
	}
	var resp pb.AppendStreamResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		return err
	}
	a.draining = resp.GetDraining()
	a.results = make([]streamAnswer, len(resp.GetResults()))
	for i, r := range resp.GetResults() {
		a.results[i] = streamAnswer{seq: r.GetSeq(), err: r.GetError(), resp: answerFromPB(r.GetResponse())}
	}
	return nil
}

// decodeFast decodes answers of the usual shape, as protobuf would; false
// for any other (then a is to be set again).
func (a *streamAnswers) decodeFast(in []byte) bool {
	*a = streamAnswers{}
	n := 0
	for b := in; len(b) > 0; {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return false
		}
		b = b[k:]
		switch {
		case num == streamResults && typ == protowire.BytesType:
			n++
		case num == streamDraining && typ == protowire.VarintType:
		default:
			return false
		}
		k = protowire.ConsumeFieldValue(num, typ, b)
		if k < 0 {
			return false
		}
		b = b[k:]
	}
	var ids idArena
	if n > 0 {
		a.results = make([]streamAnswer, 0, n)
		// The usual answer has one ID per append.
		ids = newIDArena(in, n)
	}
	for b := in; n > 0 && len(b) > 0; {
		num, _, k := protowire.ConsumeTag(b)
		b = b[k:]
		if num == streamDraining {
			v, k := protowire.ConsumeVarint(b)
			b = b[k:]
			a.draining = v != 0
			continue
		}
		v, k := protowire.ConsumeBytes(b)
		b = b[k:]
		r, ok := decodeResultFast(v, &ids)
		if !ok {
			return false
		}
		a.results = append(a.results, r)
	}
	if n == 0 {
		// Only the draining flag, if anything.
		for b := in; len(b) > 0; {
			_, _, k := protowire.ConsumeTag(b)
			b = b[k:]
			v, k := protowire.ConsumeVarint(b)
			b = b[k:]
			a.draining = v != 0
		}
	}
	return true
}

// decodeResultFast decodes one StreamAppendResult without an error; false
// for any other.
func decodeResultFast(b []byte, ids *idArena) (streamAnswer, bool) {
	var r streamAnswer
	seen := false
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return r, false
		}
		b = b[k:]
		switch {
		case num == resultSeq && typ == protowire.VarintType:
			v, k := protowire.ConsumeVarint(b)
			if k < 0 {
				return r, false
			}
			b = b[k:]
			r.seq = v
		case num == resultResponse && typ == protowire.BytesType && !seen:
			// A second response would be merged into the first: protobuf's.
			seen = true
			v, k := protowire.ConsumeBytes(b)
			if k < 0 || !decodeAnswerFast(&r.resp, v, ids) {
				return r, false
			}
			b = b[k:]
		default:
			return r, false
		}
	}
	return r, true
}

// idArena holds the IDs of one answer message: each ID is a substring of
// one copy of the message, and the answers' ID slices are cut from one
// slice, instead of a string and a slice per append. An ID kept keeps the
// message's copy (its other IDs, offsets and times) alive.
type idArena struct {
	in   []byte // the message; each ID decoded is a sub-slice of it
	s    string // in's copy, made at the first ID
	slab []string
}

// newIDArena returns an arena for the message in, expected to hold about n
// IDs.
func newIDArena(in []byte, n int) idArena {
	return idArena{in: in, slab: make([]string, 0, n)}
}

// ids returns a slice for n IDs.
func (ar *idArena) ids(n int) []string {
	if len(ar.slab)+n > cap(ar.slab) {
		return make([]string, 0, n)
	}
	l := len(ar.slab)
	ar.slab = ar.slab[:l+n]
	return ar.slab[l : l : l+n]
}

// id returns v, a sub-slice of the message, as a string.
func (ar *idArena) id(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	if ar.s == "" {
		ar.s = string(ar.in)
	}
	// v runs to the end of in's array, as every slice the decoder cut.
	off := cap(ar.in) - cap(v)
	return ar.s[off : off+len(v)]
}

// decodeAnswerFast decodes an AppendResponse into a, its IDs into ids;
// false for one of another shape.
func decodeAnswerFast(a *appendAnswer, b []byte, ids *idArena) bool {
	count := 0
	for p := b; len(p) > 0; {
		num, typ, k := protowire.ConsumeTag(p)
		if k < 0 {
			return false
		}
		p = p[k:]
		if num == answerIDs {
			count++
		}
		if k = protowire.ConsumeFieldValue(num, typ, p); k < 0 {
			return false
		}
		p = p[k:]
	}
	if count > 0 {
		a.ids = ids.ids(count)
	}
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return false
		}
		b = b[k:]
		if num == answerIDs && typ == protowire.BytesType {
			v, k := protowire.ConsumeBytes(b)
			if k < 0 || !utf8.Valid(v) {
				return false
			}
			b = b[k:]
			a.ids = append(a.ids, ids.id(v))
			continue
		}
		if typ != protowire.VarintType {
			return false
		}
		v, k := protowire.ConsumeVarint(b)
		if k < 0 {
			return false
		}
		b = b[k:]
		switch num {
		case answerQueue:
			a.queue = int32(v)
		case answerFirst:
			a.firstOffset = int64(v)
		case answerStoredAt:
			a.storedAt = int64(v)
		case answerDelayed:
			a.delayed = v != 0
		case answerDuplicate:
			a.duplicate = v != 0
		default:
			return false
		}
	}
	return true
}

// appendReply is the reply of a unary Append call: its answer, decoded
// directly when it has the usual shape, else by protobuf.
type appendReply struct {
	a appendAnswer
}

var _ wireDecoder = (*appendReply)(nil)

func (r *appendReply) decodeWire(b []byte) error {
	r.a = appendAnswer{}
	ids := newIDArena(b, 0)
	if decodeAnswerFast(&r.a, b, &ids) {
		return nil
	}
	var resp pb.AppendResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		return err
	}
	r.a = answerFromPB(&resp)
	return nil
}
