package remote

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// headersRefusedPrefix begins the message gRPC gives a call whose headers
// (its metadata: the token, the caller's own entries) are larger than the
// bound the broker told in its SETTINGS (ServerOptions.MaxMetadataBytes).
// gRPC's client transport refuses such a call itself, before the call's
// stream is opened: nothing of it left the client. It is the refusal of
// the call's only attempt, gRPC's own retries being off (Dial): a retry's
// header telling the attempts before could otherwise take a call that ran
// over the bound.
const headersRefusedPrefix = "header list size to send violates the maximum size"

// headersRefusedError is gRPC's refusal to send a call whose headers are
// over the broker's bound, as the client's own transport made it: the
// call's stream never opened (refusedHeaders). Its status is gRPC's.
type headersRefusedError struct{ st *status.Status }

func (e *headersRefusedError) Error() string { return e.st.Err().Error() }

// GRPCStatus returns gRPC's status of the refusal.
func (e *headersRefusedError) GRPCStatus() *status.Status { return e.st }

// headersRefused reports whether err is the client transport's refusal to
// send a call whose headers are over the broker's bound (a
// headersRefusedError). It is Internal, as a broken call is, but certain:
// the broker never saw the call. The code and text alone do not tell it:
// a broker (or a backend it relays) may answer Internal with that text,
// and that call was received. A broker that resets a call for its headers
// (RST_STREAM FRAME_SIZE_ERROR, when the client did not know the bound,
// behind a proxy say) is not told apart from any other reset, whose
// request may have been run: that stays a broken call.
func headersRefused(err error) bool {
	var e *headersRefusedError
	return errors.As(err, &e)
}

// openedKey is the context key of a call attempt's openedMarker.
type openedKey struct{}

// openedMarker records that the stream of a call's current attempt was
// opened: gRPC's transport reports its headers sent (sentStats), which it
// does only once they passed the broker's bound. Each attempt gRPC begins
// (a transparent retry of one the broker did not process) clears it.
type openedMarker struct{ opened atomic.Bool }

// refusedHere returns err, from a call attempt whose marker is m, as a
// headersRefusedError when it is gRPC's refusal of the attempt's headers
// made before its stream opened: by the client's transport, not an
// answer that reads like it.
func refusedHere(err error, m *openedMarker) error {
	if err == nil || m.opened.Load() {
		return err
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Internal || len(st.Details()) != 0 || !strings.HasPrefix(st.Message(), headersRefusedPrefix) {
		return err
	}
	return &headersRefusedError{st: st}
}

// markHeadersRefused is a unary client interceptor, the innermost, that
// marks the client transport's refusal of a call's headers (refusedHere).
func markHeadersRefused(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	m := new(openedMarker)
	return refusedHere(invoker(context.WithValue(ctx, openedKey{}, m), method, req, reply, cc, opts...), m)
}

// markStreamHeadersRefused is markHeadersRefused for streaming calls,
// whose headers are refused when the call is opened.
func markStreamHeadersRefused(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	m := new(openedMarker)
	s, err := streamer(context.WithValue(ctx, openedKey{}, m), desc, cc, method, opts...)
	return s, refusedHere(err, m)
}
