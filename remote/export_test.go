package remote

import (
	"slices"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

// FromStatus exposes fromStatus to the external tests.
var FromStatus = fromStatus

// RegisterWithoutStreams registers s's Broker service without its
// streaming RPCs on reg, as a server of an older version would serve it.
func RegisterWithoutStreams(s *Server, reg grpc.ServiceRegistrar) {
	d := s.desc
	d.Streams = nil
	reg.RegisterService(&d, s.svc)
}

// GeneratedIDBytes exposes the length of an engine-made ID the client
// counts in the bound of an append's answer.
const GeneratedIDBytes = generatedIDBytes

// PullResultFromPB exposes pullResultFromPB, the decoding of a pull
// answer, to the external tests.
var PullResultFromPB = pullResultFromPB

// HeldLongPolls is how many long-polls s holds.
func HeldLongPolls(s *Server) int64 { return s.longPolls.Load() }

// HeldAppendStreams is how many AppendStream calls s holds.
func HeldAppendStreams(s *Server) int64 { return s.streams.Load() }

// InFlight is how many slots of MaxInFlight s's calls and stream appends hold.
func InFlight(s *Server) int64 { return s.inFlight.Load() }

// WaitingStreamAppends is how many stream appends s has read that wait for
// their connection's share of MaxInFlight.
func WaitingStreamAppends(s *Server) int64 { return s.streamSlots.waitingAppends() }

// ClientState is the state of c's connection.
func ClientState(c *Client) connectivity.State { return c.conn.GetState() }

// ReadAheadTopics lists the topics c keeps read-ahead state for, sorted,
// each once.
func ReadAheadTopics(c *Client) []string {
	c.ahead.mu.Lock()
	defer c.ahead.mu.Unlock()
	var out []string
	for k := range c.ahead.queues {
		if !slices.Contains(out, k.topic) {
			out = append(out, k.topic)
		}
	}
	slices.Sort(out)
	return out
}

// ExtraConnStreams is the room a connection's stream bound leaves beyond
// its shares of the server's bounds.
const ExtraConnStreams = extraConnStreams

// HeartbeatSlack is how long past its wait c lets a heartbeat take.
func HeartbeatSlack(c *Client) time.Duration { return c.heartbeatSlack() }

// SetLongPollSlack sets how long past its wait c lets a long-poll take
// (30 s), so that tests of a hung connection are short.
func SetLongPollSlack(c *Client, d time.Duration) { c.slack.Store(int64(d)) }

// OnBusyRetry has f run in the client's retry of a call the server
// refused as busy, once its backoff is over and before it is sent again
// (nil: nothing). It is the package's: tests that set it do not run in
// parallel.
func OnBusyRetry(f func()) {
	if f == nil {
		testHookBusyRetry.Store(nil)
		return
	}
	testHookBusyRetry.Store(&f)
}
