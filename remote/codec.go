package remote

import (
	"fmt"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
)

// wireCodec is the gRPC codec of clients, of the server's own gRPC server
// and of a server made with Server.GRPCServerOptions: protobuf, as gRPC's default codec, but its buffers come from
// bufferPool. gRPC's codec takes the buffer of every marshal above 1 KiB,
// and of every unmarshal of a message that arrived in several pieces, from
// gRPC's default pool, which clears the buffer (1 MiB from 32 KiB up) on
// every reuse: a tenth of a consumer's CPU went into that. The bytes on the
// wire are the same (same content-subtype, same encoding), so a client with
// this codec talks to any server and the reverse.
type wireCodec struct{}

// codecName is gRPC's name of the protobuf codec: the content-subtype
// stays "proto".
const codecName = "proto"

// pooledMarshalMin is the size from which a marshal goes into a pooled
// buffer; smaller ones are allocated, as gRPC's codec does.
const pooledMarshalMin = 1 << minPoolShift

// Marshal encodes v, a protobuf message or a wireEncoder (appendwire.go).
func (wireCodec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(wireEncoder); ok {
		return e.wireBuffers(), nil
	}
	m := protoMessage(v)
	if m == nil {
		return nil, fmt.Errorf("remote: cannot marshal %T: not a protobuf message", v)
	}
	size := proto.Size(m)
	// UseCachedSize reuses the sizes Size just computed; v is not changed
	// concurrently (gRPC's codec relies on the same).
	opts := proto.MarshalOptions{UseCachedSize: true}
	if size < pooledMarshalMin {
		b, err := opts.Marshal(m)
		if err != nil {
			return nil, err
		}
		return mem.BufferSlice{mem.SliceBuffer(b)}, nil
	}
	buf := bufferPool.Get(size)
	out, err := opts.MarshalAppend((*buf)[:0], m)
	if err != nil {
		bufferPool.Put(buf)
		return nil, err
	}
	if len(out) != size || &out[0] != &(*buf)[0] {
		// The message grew past its size (changed while being encoded):
		// send what was encoded, unpooled.
		bufferPool.Put(buf)
		return mem.BufferSlice{mem.SliceBuffer(out)}, nil
	}
	return mem.BufferSlice{mem.NewBuffer(buf, bufferPool)}, nil
}

// Unmarshal decodes data into v, a protobuf message, an ownedDecoder or a
// wireDecoder (pullwire.go), or into a requestIn's request, keeping there
// what failed instead of returning it (malformed.go). Protobuf and a
// wireDecoder copy what they keep; an ownedDecoder gets a copy of data of
// its own. So data's buffers are free afterwards.
func (c wireCodec) Unmarshal(data mem.BufferSlice, v any) error {
	if in, ok := v.(*requestIn); ok {
		in.err = c.Unmarshal(data, in.v)
		return nil
	}
	if d, ok := v.(ownedDecoder); ok {
		return d.decodeOwned(data.Materialize())
	}
	if d, ok := v.(wireDecoder); ok {
		buf := data.MaterializeToBuffer(bufferPool)
		defer buf.Free()
		return d.decodeWire(buf.ReadOnlyData())
	}
	m := protoMessage(v)
	if m == nil {
		return fmt.Errorf("remote: cannot unmarshal into %T: not a protobuf message", v)
	}
	buf := data.MaterializeToBuffer(bufferPool)
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// Name is the codec's content-subtype name.
func (wireCodec) Name() string { return codecName }

// protoMessage returns v as a protobuf message (of either API), or nil.
func protoMessage(v any) proto.Message {
	switch v := v.(type) {
	case protoadapt.MessageV2:
		return v
	case protoadapt.MessageV1:
		return protoadapt.MessageV2Of(v)
	}
	return nil
}
