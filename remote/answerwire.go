package remote

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// The broker encodes a pull answer itself, straight from the engine's
// messages into one pooled buffer, with the bytes protobuf would write and
// the same trimming to the client's limit as pullAnswer. An answer
// protobuf would refuse to encode (a string that is not UTF-8) is left to
// it, and so is every answer on an application's gRPC server with an
// interceptor (as for appends, appendin.go); on one without, the encoded
// answer is also a protobuf message (pullOut).

// pullMethod is the Pull method's name in the service description.
const pullMethod = "Pull"

// pullHandler returns the Pull method's handler: the generated one, whose
// answer is encoded by encodePullAnswer when direct is set (the
// interceptor is the server's guard alone).
func pullHandler(direct bool) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		in := new(pb.PullRequest)
		if err := dec(in); err != nil {
			return nil, err
		}
		run := func(ctx context.Context, req any) (any, error) {
			if v, ok := srv.(*service); ok && direct {
				return v.pullDirect(ctx, req.(*pb.PullRequest))
			}
			return srv.(pb.BrokerServer).Pull(ctx, req.(*pb.PullRequest))
		}
		if interceptor == nil {
			return run(ctx, in)
		}
		info := &grpc.UnaryServerInfo{Server: srv, FullMethod: pb.Broker_Pull_FullMethodName}
		return interceptor(ctx, in, info, run)
	}
}

// pullDirect is Pull with the answer encoded here: as a stored batch for a
// client that reads them (storedanswer.go), else by encodePullAnswer.
func (v *service) pullDirect(ctx context.Context, req *pb.PullRequest) (any, error) {
	res, stored, limit, err := v.pull(ctx, req)
	if err != nil {
		return nil, err
	}
	if p, ok, err := planStored(&res, stored, limit); err != nil {
		return nil, err
	} else if ok {
		buf := bufferPool.Get(p.total)
		*buf = appendStoredAnswer((*buf)[:0], &res, stored, p)
		return &pullOut{pooledRequest: pooledRequest{buf: buf}}, nil
	}
	out, ok, err := encodePullAnswer(res, limit)
	if err != nil {
		return nil, err
	}
	if !ok {
		return pullAnswer(res, limit, nil)
	}
	return &pullOut{pooledRequest: out}, nil
}

// pullOut is an encoded pull answer. It is a protobuf message too, for a
// gRPC server of the application's without interceptors (whose codec is
// protobuf's): ProtoReflect decodes the encoded bytes, for protobuf to
// encode again.
type pullOut struct {
	pooledRequest
	msg *pb.PullResponse
}

// ProtoReflect is the answer as a protobuf message, for another codec.
func (o *pullOut) ProtoReflect() protoreflect.Message {
	if o.msg == nil {
		o.msg = new(pb.PullResponse)
		// The bytes are protobuf's own encoding (encodePullAnswer): they
		// decode. The buffer is left to the collector, not the pool.
		_ = proto.Unmarshal(*o.buf, o.msg)
	}
	return o.msg.ProtoReflect()
}

// encodePullAnswer encodes res as pullAnswer would, leaving out trailing
// messages while the answer would pass limit bytes. ok is false when
// protobuf must encode it.
func encodePullAnswer(res equeue.PullResult, limit int) (out pooledRequest, ok bool, err error) {
	msgs := res.Messages
	for i, m := range msgs {
		if m == nil {
			return out, false, fmt.Errorf("%w: message %d is nil", equeue.ErrInvalidArgument, i)
		}
		if err := answerTimes(i, m); err != nil {
			return out, false, err
		}
	}
	sizes := make([]int, len(msgs))
	var sys []map[string]string
	for i, m := range msgs {
		s := m.SysProperties()
		if s != nil && sys == nil {
			sys = make([]map[string]string, len(msgs))
		}
		if sys != nil {
			sys[i] = s
		}
		if sizes[i], ok = messageSize(m, s); !ok {
			return out, false, nil
		}
	}
	next := res.NextOffset
	size := answerSize(res, next, sizes)
	// As sizedPullAnswer: its size is exact (the same bytes), and then each
	// message left out is subtracted, the next offset's field counted at
	// its widest.
	n := len(msgs)
	for size > limit && n > 0 {
		if n == 1 {
			m := msgs[0]
			return out, false, &equeue.MessageTooLargeError{QueueRef: equeue.QueueRef{Topic: m.Topic, Queue: m.Queue}, Offset: m.Offset, Limit: limit}
		}
		n--
		next = msgs[n].Offset
		size -= 1 + protowire.SizeBytes(sizes[n])
		size += 1 + protowire.SizeVarint(uint64(next))
	}
	sizes = sizes[:n]
	buf := bufferPool.Get(answerSize(res, next, sizes))
	b := (*buf)[:0]
	b = appendVarint(b, pullStatus, int64(int32(res.Status)))
	for i, sz := range sizes {
		b = protowire.AppendTag(b, pullMessages, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sz))
		var s map[string]string
		if sys != nil {
			s = sys[i]
		}
		b = appendMessage(b, msgs[i], s)
	}
	b = appendAnswerTail(b, res, next)
	b = appendVarint(b, pullPriority, int64(toInt32(res.Priority)))
	b = appendVarint(b, pullDeletedRetries, int64(toInt32(res.DeletedTopicRetries)))
	*buf = b
	return pooledRequest{buf: buf}, true, nil
}

// appendAnswerTail appends the fields of res's answer after its messages:
// the next offset (next), the bounds, the corrupt offsets and the expired
// count.
func appendAnswerTail(b []byte, res equeue.PullResult, next int64) []byte {
	b = appendVarint(b, pullNextOffset, next)
	b = appendVarint(b, pullMinOffset, res.MinOffset)
	b = appendVarint(b, pullMaxOffset, res.MaxOffset)
	if len(res.Corrupt) > 0 {
		b = protowire.AppendTag(b, pullCorrupt, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(corruptSize(res.Corrupt)))
		for _, c := range res.Corrupt {
			b = protowire.AppendVarint(b, uint64(c))
		}
	}
	b = appendVarint(b, pullExpired, int64(toInt32(res.Expired)))
	return b
}

// answerSize is the encoded size of res's answer with next as its next
// offset and messages of the given sizes (or, with none, a stored batch's
// field to add).
func answerSize(res equeue.PullResult, next int64, sizes []int) int {
	n := varintSize(pullStatus, int64(int32(res.Status))) + varintSize(pullNextOffset, next) +
		varintSize(pullMinOffset, res.MinOffset) + varintSize(pullMaxOffset, res.MaxOffset) +
		varintSize(pullExpired, int64(toInt32(res.Expired))) + varintSize(pullPriority, int64(toInt32(res.Priority))) +
		varintSize(pullDeletedRetries, int64(toInt32(res.DeletedTopicRetries)))
	if len(res.Corrupt) > 0 {
		n += protowire.SizeTag(pullCorrupt) + protowire.SizeBytes(corruptSize(res.Corrupt))
	}
	for _, sz := range sizes {
		n += protowire.SizeTag(pullMessages) + protowire.SizeBytes(sz)
	}
	return n
}

// corruptSize is the size of the packed corrupt offsets.
func corruptSize(cs []int64) int {
	n := 0
	for _, c := range cs {
		n += protowire.SizeVarint(uint64(c))
	}
	return n
}
