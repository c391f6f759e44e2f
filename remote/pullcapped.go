package remote

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// mdPullCapped is the header in which the server tells that a PullMany
// call's wait ended before the wait it asked, with nothing found: the
// engine's MaxPullWait cut it short. The engine answers a pull so in
// process, with nothing at its cap, so the client answers every pull of
// the call that found nothing, whatever is left of its own wait, also
// before a join or heartbeat answer told it the cap (Assignment.
// MaxPullWait): the first long-poll of a connection included. A server of
// an older version sends no such header; its client's pulls are asked
// again until their own wait ends or an answer tells the cap.
const mdPullCapped = "equeue-pull-capped"

// tellCapped sets mdPullCapped on the answer of a PullMany call whose
// wait, asked to last asked from start, ended with nothing found; it does
// nothing when the wait lasted what was asked (the engine's timers never
// fire early, so only its cap ends it before).
func tellCapped(ctx context.Context, start time.Time, asked time.Duration) {
	if time.Since(start) >= asked {
		return
	}
	// Only an answer already sent fails it: then there is no one to tell.
	_ = grpc.SetHeader(ctx, metadata.Pairs(mdPullCapped, "1"))
}

// capped reports whether a PullMany answer's header says the engine's cap
// ended its wait (mdPullCapped).
func capped(header metadata.MD) bool {
	return len(header.Get(mdPullCapped)) > 0
}
