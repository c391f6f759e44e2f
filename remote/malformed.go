package remote

import (
	"fmt"

	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
)

// requestIn is what the Broker methods of the server's own gRPC server
// decode a request into: the request, v, and what failed to decode it.
// gRPC answers a codec's failure itself, as Internal, whatever the codec
// returned (it turns the error into an Internal status and sends that
// before the method sees it), so wireCodec decodes a requestIn without
// failing, keeping the failure in err, and the method answers
// InvalidArgument (see decodeRequest). Only the server's own gRPC server
// decodes into a requestIn: it alone is known to use wireCodec.
type requestIn struct {
	v   any
	err error
}

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

// requestStream is a stream of the server's own gRPC server: its
// messages decode as decodeRequest's.
type requestStream struct{ grpc.ServerStream }

// RecvMsg receives the next message into m; one that does not decode is
// an InvalidArgument error.
func (s requestStream) RecvMsg(m any) error { return decodeRequest(s.ServerStream.RecvMsg)(m) }
