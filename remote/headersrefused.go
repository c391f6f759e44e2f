package remote

import (
	"strings"

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

// headersRefused reports whether st is gRPC's refusal to send a call whose
// headers are over the broker's bound. It is Internal, as a broken call
// is, but certain: the broker never saw the call. A broker that resets a
// call for its headers (RST_STREAM FRAME_SIZE_ERROR, when the client did
// not know the bound, behind a proxy say) is not told apart from any other
// reset, whose request may have been run: that stays a broken call.
func headersRefused(st *status.Status) bool {
	return st.Code() == codes.Internal && len(st.Details()) == 0 && strings.HasPrefix(st.Message(), headersRefusedPrefix)
}
