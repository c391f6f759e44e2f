package remote

import (
	"fmt"
	"unicode/utf8"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// The broker encodes its answers to appends itself, straight from the
// engine's results into one pooled buffer: through protobuf, every answer
// of an AppendStream call cost a result and a response message and
// protobuf's reflection to size and write them, and a unary answer of a
// batch the same for its IDs. The bytes are those protobuf writes. An
// answer holding an error, or an ID that is not UTF-8 (protobuf refuses to
// encode it), is left to protobuf.
//
// The answer types are protobuf messages too (ProtoReflect builds the
// generated message on first use), so a gRPC server of the application's
// (Server.Register) made without Server.GRPCServerOptions, whose codec is
// protobuf's, sends the same bytes.

// appendOut is the answer to a unary Append.
type appendOut struct {
	res equeue.AppendResult
	msg *pb.AppendResponse // built by ProtoReflect
}

var _ wireEncoder = (*appendOut)(nil)

// appendAnswerOut returns res as the answer of a unary Append: an appendOut,
// or the protobuf message when protobuf must encode it.
func appendAnswerOut(res equeue.AppendResult) any {
	if !idsValid(res.IDs) {
		return appendToPB(res)
	}
	return &appendOut{res: res}
}

func (o *appendOut) wireBuffers() mem.BufferSlice {
	size := answerWireSize(o.res)
	buf := bufferPool.Get(size)
	*buf = appendAnswerWire((*buf)[:0], o.res)
	return mem.BufferSlice{mem.NewBuffer(buf, bufferPool)}
}

// ProtoReflect is the answer as a protobuf message, for another codec.
func (o *appendOut) ProtoReflect() protoreflect.Message {
	if o.msg == nil {
		o.msg = appendToPB(o.res)
	}
	return o.msg.ProtoReflect()
}

// streamOut is one append's outcome on an AppendStream call: err when it
// failed, else res.
type streamOut struct {
	seq uint64
	res equeue.AppendResult
	err *pb.PullError
}

// streamOuts is an AppendStreamResponse of results (never draining: that
// flag goes alone, as a protobuf message).
type streamOuts struct {
	results []streamOut
	msg     *pb.AppendStreamResponse // built by ProtoReflect
}

var _ wireEncoder = (*streamOuts)(nil)

// streamAnswerOut returns the answer carrying results: a streamOuts, or
// the protobuf message when protobuf must encode it.
func streamAnswerOut(results []streamOut) any {
	for i := range results {
		if results[i].err != nil || !idsValid(results[i].res.IDs) {
			return streamAnswerPB(results)
		}
	}
	return &streamOuts{results: results}
}

// streamAnswerPB is results as a protobuf message.
func streamAnswerPB(results []streamOut) *pb.AppendStreamResponse {
	out := &pb.AppendStreamResponse{Results: make([]*pb.StreamAppendResult, len(results))}
	for i, r := range results {
		pr := &pb.StreamAppendResult{Seq: r.seq}
		if r.err != nil {
			pr.Error = r.err
		} else {
			pr.Response = appendToPB(r.res)
		}
		out.Results[i] = pr
	}
	return out
}

func (o *streamOuts) wireBuffers() mem.BufferSlice {
	size := 0
	for i := range o.results {
		size += protowire.SizeTag(streamResults) + protowire.SizeBytes(resultWireSize(&o.results[i]))
	}
	buf := bufferPool.Get(size)
	b := (*buf)[:0]
	for i := range o.results {
		r := &o.results[i]
		b = protowire.AppendTag(b, streamResults, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(resultWireSize(r)))
		b = appendVarint(b, resultSeq, int64(r.seq))
		b = protowire.AppendTag(b, resultResponse, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(answerWireSize(r.res)))
		b = appendAnswerWire(b, r.res)
	}
	*buf = b
	return mem.BufferSlice{mem.NewBuffer(buf, bufferPool)}
}

// ProtoReflect is the answer as a protobuf message, for another codec.
func (o *streamOuts) ProtoReflect() protoreflect.Message {
	if o.msg == nil {
		o.msg = streamAnswerPB(o.results)
	}
	return o.msg.ProtoReflect()
}

// resultWireSize is the encoded size of a StreamAppendResult without an
// error.
func resultWireSize(r *streamOut) int {
	return varintSize(resultSeq, int64(r.seq)) + protowire.SizeTag(resultResponse) + protowire.SizeBytes(answerWireSize(r.res))
}

// idsValid reports whether protobuf would encode ids (all UTF-8).
func idsValid(ids []string) bool {
	for _, id := range ids {
		if !utf8.ValidString(id) {
			return false
		}
	}
	return true
}

// answerWireSize is the encoded size of res as an AppendResponse.
func answerWireSize(res equeue.AppendResult) int {
	n := varintSize(answerQueue, int64(toInt32(res.Queue))) + varintSize(answerFirst, res.FirstOffset) +
		varintSize(answerStoredAt, nanos(res.StoredAt)) + boolSize(answerDelayed, res.Delayed) +
		boolSize(answerDuplicate, res.Duplicate)
	for _, id := range res.IDs {
		n += protowire.SizeTag(answerIDs) + protowire.SizeBytes(len(id))
	}
	return n
}

// generatedIDBytes is the length of the ID the engine makes for a message
// sent without one (24 hex digits).
const generatedIDBytes = 24

// appendAnswerBound bounds the encoded answer to req as one result of an
// AppendStream answer message, which is larger than the answer to a unary
// Append: every field at its widest, and an ID per message, the message's
// own or one the engine makes.
func appendAnswerBound(req *equeue.AppendRequest) int {
	n := varintSize(answerQueue, -1) + varintSize(answerFirst, -1) + varintSize(answerStoredAt, -1) +
		boolSize(answerDelayed, true) + boolSize(answerDuplicate, true)
	for _, m := range req.Messages {
		id := len(m.ID)
		if id == 0 {
			id = generatedIDBytes
		}
		n += protowire.SizeTag(answerIDs) + protowire.SizeBytes(id)
	}
	result := varintSize(resultSeq, -1) + protowire.SizeTag(resultResponse) + protowire.SizeBytes(n)
	return protowire.SizeTag(streamResults) + protowire.SizeBytes(result)
}

// answerFits refuses, before it is sent, an append whose answer could be
// larger than the client receives: the broker would store it and the
// client could not read that it did.
func (c *Client) answerFits(req *equeue.AppendRequest) error {
	if b := appendAnswerBound(req); b > c.maxAnswer {
		return fmt.Errorf("%w: the answer to an append of %d messages may take %d bytes, over the client's MaxMessageBytes %d",
			equeue.ErrMessageTooLarge, len(req.Messages), b, c.maxAnswer)
	}
	return nil
}

// streamResultSize is the encoded size of r in an AppendStream answer.
func streamResultSize(r *streamOut) int {
	size := 0
	if r.err != nil {
		size = proto.Size(&pb.StreamAppendResult{Seq: r.seq, Error: r.err})
	} else {
		size = resultWireSize(r)
	}
	return protowire.SizeTag(streamResults) + protowire.SizeBytes(size)
}

// appendAnswerWire appends res as an AppendResponse, as answerWireSize
// counted it.
func appendAnswerWire(b []byte, res equeue.AppendResult) []byte {
	b = appendVarint(b, answerQueue, int64(toInt32(res.Queue)))
	b = appendVarint(b, answerFirst, res.FirstOffset)
	b = appendVarint(b, answerStoredAt, nanos(res.StoredAt))
	for _, id := range res.IDs {
		// A repeated string is written even when empty.
		b = protowire.AppendTag(b, answerIDs, protowire.BytesType)
		b = protowire.AppendString(b, id)
	}
	b = appendVarint(b, answerDelayed, boolVarint(res.Delayed))
	return appendVarint(b, answerDuplicate, boolVarint(res.Duplicate))
}

func boolVarint(v bool) int64 {
	if v {
		return 1
	}
	return 0
}

func boolSize(num protowire.Number, v bool) int { return varintSize(num, boolVarint(v)) }
