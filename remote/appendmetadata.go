package remote

import (
	"context"

	"google.golang.org/grpc/metadata"
)

// callerMetadata reports whether ctx carries outgoing metadata of the
// caller's. The client's append stream is shared by every append and was
// opened with metadata of its own: an append sent on it would reach the
// broker without the caller's, so such an append goes as a unary call.
func callerMetadata(ctx context.Context) bool {
	md, ok := metadata.FromOutgoingContext(ctx)
	return ok && md.Len() > 0
}
