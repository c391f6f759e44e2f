package remote

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/equeue-go/equeue"
)

// requestIn is what the methods registered with registerDecoding decode a
// request into: the request, v (a protobuf message: every request type is
// one, or embeds its own), and what failed to decode it. gRPC answers a
// codec's failure itself, as Internal, whatever the codec returned (it
// turns the error into an Internal status and sends that before the
// method sees it), so wireCodec decodes a requestIn without failing,
// keeping the failure in err, and the method answers InvalidArgument (see
// decodeRequest).
//
// On a gRPC server with another codec (one made without
// Server.GRPCServerOptions), a protobuf codec decodes a requestIn as the
// message v, which ProtoReflect stands for: the request is decoded as
// without requestIn, and one that does not decode is answered Internal by
// gRPC, as before.
type requestIn struct {
	v   any
	err error
}

// ProtoReflect is v's, so that a protobuf codec other than wireCodec
// decodes into v.
func (in *requestIn) ProtoReflect() protoreflect.Message { return protoMessage(in.v).ProtoReflect() }

// decodeRequest returns dec decoding into a requestIn: a request that
// does not decode is an InvalidArgument error (malformedRequest); other
// failures of dec (the call ended, a request larger than MaxMessageBytes)
// are returned as they are.
func decodeRequest(dec func(any) error) func(any) error {
	return func(v any) error {
		in := &requestIn{v: v}
		if err := dec(in); err != nil {
			return err
		}
		if in.err != nil {
			return malformedRequest(in.err)
		}
		return nil
	}
}

// malformedRequest is the status of a request that did not decode:
// InvalidArgument, as equeue.ErrInvalidArgument on the client.
func malformedRequest(err error) error {
	return toStatus(fmt.Errorf("%w: malformed request: %v", equeue.ErrInvalidArgument, err))
}

// requestStream is a stream of a method registered with
// registerDecoding: its messages decode as decodeRequest's.
type requestStream struct{ grpc.ServerStream }

// RecvMsg receives the next message into m; one that does not decode is
// an InvalidArgument error.
func (s requestStream) RecvMsg(m any) error { return decodeRequest(s.ServerStream.RecvMsg)(m) }

// registerDecoding registers the service d, served by impl, on reg with
// every request decoded by decodeRequest, unary and streamed.
func registerDecoding(reg grpc.ServiceRegistrar, d *grpc.ServiceDesc, impl any) {
	w := *d
	w.Methods = make([]grpc.MethodDesc, len(d.Methods))
	for i, m := range d.Methods {
		h := m.Handler
		w.Methods[i] = grpc.MethodDesc{
			MethodName: m.MethodName,
			Handler: func(srv any, ctx context.Context, dec func(any) error, next grpc.UnaryServerInterceptor) (any, error) {
				return h(srv, ctx, decodeRequest(dec), next)
			},
		}
	}
	w.Streams = make([]grpc.StreamDesc, len(d.Streams))
	for i, sd := range d.Streams {
		h := sd.Handler
		sd.Handler = func(srv any, st grpc.ServerStream) error { return h(srv, requestStream{st}) }
		w.Streams[i] = sd
	}
	reg.RegisterService(&w, impl)
}

// requestServer is s's own gRPC server, on which the services registered
// through it (health and reflection) decode their requests as
// registerDecoding does. It is a reflection.GRPCServer.
type requestServer struct{ *grpc.Server }

// RegisterService registers d, served by impl, with registerDecoding.
func (s requestServer) RegisterService(d *grpc.ServiceDesc, impl any) {
	registerDecoding(s.Server, d, impl)
}
