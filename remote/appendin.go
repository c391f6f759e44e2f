package remote

import (
	"context"
	"fmt"
	"sync/atomic"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// The broker decodes appends straight into the engine's types, as clients
// decode pull answers (pullwire.go): one copy of the request that the
// messages' bodies share (the engine copies a body into its record before
// the append returns), one allocation for the messages, instead of a wire
// message, a body and strings per message and then the engine's message.
// Requests of another shape (a delay or TTL on a message, a sync interval,
// a field it does not know or of an unexpected type, a string that is not
// UTF-8) are decoded by protobuf, so every request is answered as before.
//
// Only this package's codec decodes directly. The request types embed the
// protobuf message, so that on a gRPC server of the application's (see
// Server.Register) made without Server.GRPCServerOptions, whose codec is
// protobuf's, they are decoded into it.

// appendMethod is the Append method's name in the service description.
const appendMethod = "Append"

// directAppend is one append decoded directly: what appendFromPB would
// have returned, and the topic its rights depend on.
type directAppend struct {
	topic string
	req   *equeue.AppendRequest
	err   error
}

// appendIn is the request of a unary Append call.
type appendIn struct {
	pb.AppendRequest
	direct  bool // decodeWire may decode directly (else into AppendRequest)
	decoded bool // it did: d holds the append
	d       directAppend
}

var _ wireDecoder = (*appendIn)(nil)

func (in *appendIn) decodeWire(b []byte) error {
	if in.direct {
		if d, ok := decodeAppendFast(append([]byte(nil), b...), nil, nil); ok {
			in.decoded, in.d = true, d
			// authorize and the refusal log read the topic from here.
			in.AppendRequest.Topic = d.topic
			return nil
		}
	}
	return proto.Unmarshal(b, &in.AppendRequest)
}

// appendHandler returns the Append method's handler: the generated one,
// with the request decoded by appendIn, directly when direct is set (the
// interceptor is the server's guard alone: an application's interceptor
// gets the request as protobuf decodes it).
func appendHandler(direct bool) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor) (any, error) {
		return handleAppend(srv, ctx, dec, interceptor, direct)
	}
}

func handleAppend(srv any, ctx context.Context, dec func(any) error, interceptor grpc.UnaryServerInterceptor, direct bool) (any, error) {
	in := &appendIn{direct: direct}
	if err := dec(in); err != nil {
		return nil, err
	}
	run := func(ctx context.Context, req any) (any, error) {
		if in.decoded && req == &in.AppendRequest {
			if v, ok := srv.(*service); ok {
				return v.appendDirect(ctx, in.d)
			}
		}
		return srv.(pb.BrokerServer).Append(ctx, req.(*pb.AppendRequest))
	}
	if interceptor == nil {
		return run(ctx, &in.AppendRequest)
	}
	info := &grpc.UnaryServerInfo{Server: srv, FullMethod: pb.Broker_Append_FullMethodName}
	return interceptor(ctx, &in.AppendRequest, info, run)
}

// appendDirect is Append of a directly decoded request.
func (v *service) appendDirect(ctx context.Context, d directAppend) (any, error) {
	if d.err != nil {
		return nil, d.err
	}
	res, err := v.e.Append(ctx, d.req)
	if err != nil {
		return nil, err
	}
	return appendAnswerOut(res), nil
}

// decodeAppendFast decodes an AppendRequest of the usual shape as
// protobuf and appendFromPB would; false for any other. b is the
// request's own copy: the bodies point into it. topic, when not nil, is
// the topic of the request's previous append, whose string is reused when
// this one's is the same (the appends of a stream are mostly to one
// topic); it is set to this one's. ones, when not nil, gives an append of
// one message its request and message.
func decodeAppendFast(b []byte, topic *string, ones *oneAppends) (directAppend, bool) {
	var d directAppend
	var name []byte
	var queue int32
	var kind pb.SyncPolicy
	n := 0
	for p := b; len(p) > 0; {
		num, typ, k := protowire.ConsumeTag(p)
		if k < 0 {
			return d, false
		}
		p = p[k:]
		switch {
		case num == appendTopic && typ == protowire.BytesType:
			v, k := protowire.ConsumeBytes(p)
			if k < 0 || !utf8.Valid(v) {
				return d, false
			}
			name, p = v, p[k:]
			continue
		case num == appendMessages && typ == protowire.BytesType:
			n++
		case (num == appendQueue || num == appendSync) && typ == protowire.VarintType:
			v, k := protowire.ConsumeVarint(p)
			if k < 0 {
				return d, false
			}
			if num == appendQueue {
				queue = int32(v)
			} else {
				kind = pb.SyncPolicy(int32(v))
			}
			p = p[k:]
			continue
		default:
			return d, false
		}
		k = protowire.ConsumeFieldValue(num, typ, p)
		if k < 0 {
			return d, false
		}
		p = p[k:]
	}
	switch {
	case topic == nil:
		d.topic = string(name)
	case string(name) == *topic:
		d.topic = *topic
	default:
		d.topic = string(name)
		*topic = d.topic
	}
	var msgs []equeue.Message
	var ptrs []*equeue.Message
	var req *equeue.AppendRequest
	switch {
	case n == 1:
		// The usual async send: one allocation for the request and its message.
		one := ones.next()
		req, msgs, ptrs = &one.req, one.msg[:], one.ptr[:]
	case n > 1:
		req, msgs, ptrs = new(equeue.AppendRequest), make([]equeue.Message, n), make([]*equeue.Message, n)
	}
	// The messages' topic is the request's, as a rule: one string.
	last := strings3{topic: name, topicS: d.topic}
	i := 0
	for p := b; n > 0 && len(p) > 0; {
		num, typ, k := protowire.ConsumeTag(p)
		p = p[k:]
		if num != appendMessages {
			k = protowire.ConsumeFieldValue(num, typ, p)
			p = p[k:]
			continue
		}
		v, k := protowire.ConsumeBytes(p)
		p = p[k:]
		if !decodeMessageFast(&msgs[i], v, &last) {
			return d, false
		}
		ptrs[i] = &msgs[i]
		i++
	}
	// appendFromPB's checks, in its order.
	if n == 0 {
		d.err = fmt.Errorf("%w: no messages to append", equeue.ErrInvalidArgument)
		return d, true
	}
	sync, err := syncFromPB(kind, nil)
	if err != nil {
		d.err = err
		return d, true
	}
	*req = equeue.AppendRequest{Topic: d.topic, Queue: int(queue), Messages: ptrs, Sync: sync}
	d.req = req
	return d, true
}

// oneAppend is an append of one message, allocated together.
type oneAppend struct {
	req equeue.AppendRequest
	msg [1]equeue.Message
	ptr [1]*equeue.Message
}

// oneAppends hands out the oneAppends of a request's appends of one
// message, allocated together: one allocation per request instead of one
// per append (per message of every SendAsync). They live as long as the
// longest-lived of them, as the request's copy, which their bodies share,
// does already.
type oneAppends struct {
	free []oneAppend
	left int // appends of the request not decoded yet, this one included
}

// next returns a oneAppend for the request's next append; a nil o
// allocates one of its own.
func (o *oneAppends) next() *oneAppend {
	if o == nil {
		return new(oneAppend)
	}
	if len(o.free) == 0 {
		// For this append and every later one that may have one message.
		o.free = make([]oneAppend, max(o.left, 1))
	}
	one := &o.free[0]
	o.free = o.free[1:]
	return one
}

// streamIn is one append of an AppendStream request.
type streamIn struct {
	seq     uint64
	present bool              // the request has an append
	d       directAppend      // decoded directly; when not, only its topic
	in      *pb.AppendRequest // decoded by protobuf
	// answered: the append's slot was given back and its answer queued
	// (appendStream.slotAnswer).
	answered atomic.Bool
}

// request is the append, or appendFromPB's refusal of it.
func (it *streamIn) request() (*equeue.AppendRequest, error) {
	if it.in != nil {
		return appendFromPB(it.in)
	}
	return it.d.req, it.d.err
}

// appendsIn is a request of an AppendStream call.
type appendsIn struct {
	pb.AppendStreamRequest
	direct bool       // decodeWire may decode directly
	items  []streamIn // it did
}

var _ wireDecoder = (*appendsIn)(nil)

func (in *appendsIn) decodeWire(b []byte) error {
	if in.direct {
		if items, ok := decodeAppendsFast(append([]byte(nil), b...)); ok {
			in.items = items
			return nil
		}
	}
	return proto.Unmarshal(b, &in.AppendStreamRequest)
}

// appends returns the request's appends, however it was decoded.
func (in *appendsIn) appends() []streamIn {
	if in.items != nil {
		return in.items
	}
	out := make([]streamIn, len(in.GetAppends()))
	for i, it := range in.GetAppends() {
		out[i] = streamIn{seq: it.GetSeq(), present: it.GetAppend() != nil, in: it.GetAppend()}
		out[i].d.topic = it.GetAppend().GetTopic()
	}
	return out
}

// decodeAppendsFast decodes an AppendStreamRequest whose appends are all
// of the usual shape; false for any other. b is the request's own copy.
func decodeAppendsFast(b []byte) ([]streamIn, bool) {
	n := 0
	for p := b; len(p) > 0; {
		num, typ, k := protowire.ConsumeTag(p)
		if k < 0 || num != requestAppends || typ != protowire.BytesType {
			return nil, false
		}
		p = p[k:]
		_, k = protowire.ConsumeBytes(p)
		if k < 0 {
			return nil, false
		}
		p = p[k:]
		n++
	}
	items := make([]streamIn, n) // not nil: an empty request has no appends
	var topic string
	var ones oneAppends
	for i, p := 0, b; len(p) > 0; i++ {
		_, _, k := protowire.ConsumeTag(p)
		p = p[k:]
		v, k := protowire.ConsumeBytes(p)
		p = p[k:]
		ones.left = n - i
		if !decodeItemFast(&items[i], v, &topic, &ones) {
			return nil, false
		}
	}
	return items, true
}

// decodeItemFast decodes one StreamAppend of the usual shape into it,
// with ones giving an append of one message its request and message.
func decodeItemFast(it *streamIn, b []byte, topic *string, ones *oneAppends) bool {
	for len(b) > 0 {
		num, typ, k := protowire.ConsumeTag(b)
		if k < 0 {
			return false
		}
		b = b[k:]
		switch {
		case num == itemSeq && typ == protowire.VarintType:
			v, k := protowire.ConsumeVarint(b)
			if k < 0 {
				return false
			}
			it.seq, b = v, b[k:]
		case num == itemAppend && typ == protowire.BytesType && !it.present:
			// A second append would be merged into the first: protobuf's.
			v, k := protowire.ConsumeBytes(b)
			if k < 0 {
				return false
			}
			d, ok := decodeAppendFast(v, topic, ones)
			if !ok {
				return false
			}
			it.present, it.d, b = true, d, b[k:]
		default:
			return false
		}
	}
	return true
}
