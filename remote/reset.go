package remote

import (
	"strings"

	"google.golang.org/grpc/status"
)

// rstPrefix begins the message gRPC gives a call whose stream the other
// side (the broker's transport, or a proxy on the way) reset with
// RST_STREAM, whatever status code it maps the reset's HTTP/2 code to.
const rstPrefix = "stream terminated by RST_STREAM"

// streamReset reports whether st is a stream reset rather than an answer:
// the call broke on the way, whatever happened to its request. gRPC gives
// a reset the code of its HTTP/2 error code, so FLOW_CONTROL_ERROR and
// ENHANCE_YOUR_CALM come as ResourceExhausted (the code of gRPC's message
// size limits), INADEQUATE_SECURITY as PermissionDenied and CANCEL as
// Canceled: read by code they would say "too large", "no right" or "your
// context ended", and a send "not stored". The message tells it apart.
// A reset is ErrUnavailable (a broken call, which the client may make
// again), or DeadlineExceeded when the call's deadline had passed.
func streamReset(st *status.Status) bool {
	return len(st.Details()) == 0 && strings.HasPrefix(st.Message(), rstPrefix)
}
