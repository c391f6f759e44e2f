package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// serverLimits are serve's flags for the gRPC server's limits, the byte
// and count bounds of remote.ServerOptions; zero is the server's default.
type serverLimits struct {
	maxMessageBytes         int
	maxMetadataBytes        int
	maxInFlight             int
	maxInFlightPerConn      int
	maxLongPolls            int
	maxLongPollsPerConn     int
	maxLongPollBytes        int64
	maxAppendStreams        int
	maxAppendStreamsPerConn int
	maxStreamAppendsPerConn int
}

// addFlags registers the flags on f.
func (l *serverLimits) addFlags(f *pflag.FlagSet) {
	f.IntVar(&l.maxMessageBytes, "max-message-bytes", 0, fmt.Sprintf("largest encoded gRPC request accepted, so the largest append batch; at least %d, a full-size message and its framing (0: the default, %d)", leastMessageBytes, remote.DefaultMaxMessageBytes))
	f.IntVar(&l.maxMetadataBytes, "max-metadata-bytes", 0, fmt.Sprintf("largest metadata (headers: token, trace context) a gRPC call may carry (0: the default, %d)", remote.DefaultMaxMetadataBytes))
	f.IntVar(&l.maxInFlight, "max-in-flight", 0, fmt.Sprintf("most gRPC calls other than long-polls run at once; more are refused as busy, and clients retry (0: the default, %d)", remote.DefaultMaxInFlight))
	f.IntVar(&l.maxInFlightPerConn, "max-in-flight-per-conn", 0, "most of --max-in-flight one connection's unary calls hold (0: half of it)")
	f.IntVar(&l.maxLongPolls, "max-long-polls", 0, fmt.Sprintf("most long-polls (waiting pulls and heartbeats) held at once (0: the default, %d)", remote.DefaultMaxLongPolls))
	f.IntVar(&l.maxLongPollsPerConn, "max-long-polls-per-conn", 0, "most of --max-long-polls one connection holds (0: half of it, and at least 2)")
	f.Int64Var(&l.maxLongPollBytes, "max-long-poll-bytes", 0, fmt.Sprintf("most bytes of requests held long-polls keep, half of it for one connection; at least --max-message-bytes (0: the default, %d)", remote.DefaultMaxLongPollBytes))
	f.IntVar(&l.maxAppendStreams, "max-append-streams", 0, fmt.Sprintf("most append streams (one per producing client) open at once (0: the default, %d)", remote.DefaultMaxAppendStreams))
	f.IntVar(&l.maxAppendStreamsPerConn, "max-append-streams-per-conn", 0, "most of --max-append-streams one connection holds (0: half of it)")
	f.IntVar(&l.maxStreamAppendsPerConn, "max-stream-appends-per-conn", 0, "most of --max-in-flight one connection's streamed appends hold; more wait (0: half of it)")
}

// check refuses a negative value, naming its flag, before serve takes a
// port or creates anything (remote.NewServer would refuse it only once
// the engine is open).
func (l *serverLimits) check() error {
	for _, v := range []struct {
		name string
		n    int64
	}{
		{"max-message-bytes", int64(l.maxMessageBytes)},
		{"max-metadata-bytes", int64(l.maxMetadataBytes)},
		{"max-in-flight", int64(l.maxInFlight)},
		{"max-in-flight-per-conn", int64(l.maxInFlightPerConn)},
		{"max-long-polls", int64(l.maxLongPolls)},
		{"max-long-polls-per-conn", int64(l.maxLongPollsPerConn)},
		{"max-long-poll-bytes", l.maxLongPollBytes},
		{"max-append-streams", int64(l.maxAppendStreams)},
		{"max-append-streams-per-conn", int64(l.maxAppendStreamsPerConn)},
		{"max-stream-appends-per-conn", int64(l.maxStreamAppendsPerConn)},
	} {
		if v.n < 0 {
			return usageErrorf("--%s %d: must not be negative (0: the default)", v.name, v.n)
		}
	}
	if n := l.maxMessageBytes; n > 0 && n < leastMessageBytes {
		return usageErrorf("--max-message-bytes %d: below %d, the engine's largest message (%d) and its request's framing: "+
			"the server would refuse messages the engine takes", n, leastMessageBytes, equeue.DefaultMaxMessageSize)
	}
	return nil
}

// requestFraming is the room a request needs beyond the one message it
// carries (its topic and the wire's tags and lengths), as
// remote.DefaultMaxMessageBytes leaves it beyond its 8 MiB.
const requestFraming = 64 << 10

// leastMessageBytes is the least --max-message-bytes serve takes: one
// message of the engine's largest, which serve leaves at
// equeue.DefaultMaxMessageSize, and its request's framing. Less would
// refuse over gRPC messages that the engine, and serve's Kafka listener,
// take. More is taken: one request carries a batch of messages.
const leastMessageBytes = equeue.DefaultMaxMessageSize + requestFraming

// apply sets the limits in o.
func (l *serverLimits) apply(o *remote.ServerOptions) {
	o.MaxMessageBytes = l.maxMessageBytes
	o.MaxMetadataBytes = l.maxMetadataBytes
	o.MaxInFlight = l.maxInFlight
	o.MaxInFlightPerConn = l.maxInFlightPerConn
	o.MaxLongPolls = l.maxLongPolls
	o.MaxLongPollsPerConn = l.maxLongPollsPerConn
	o.MaxLongPollBytes = l.maxLongPollBytes
	o.MaxAppendStreams = l.maxAppendStreams
	o.MaxAppendStreamsPerConn = l.maxAppendStreamsPerConn
	o.MaxStreamAppendsPerConn = l.maxStreamAppendsPerConn
}
