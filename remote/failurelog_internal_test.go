package remote

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// warnings returns the Warn records of r with message msg.
func (r *records) warnings(msg string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.all {
		if rec.Level == slog.LevelWarn && rec.Message == msg {
			out = append(out, rec)
		}
	}
	return out
}

// A leader that loses its leadership with 10k appends in flight answers
// each of unknown outcome (Unknown on the wire): the server logged a Warn
// line per append, unary or on a stream. Now these lines are bounded per
// window, the next line saying how many were left out, and a failure of
// another kind (Internal) still gets its own lines.
func TestServer_FailuresOfAFailoverDoNotFloodTheLog(t *testing.T) {
	const n = 10000
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	h := &records{}
	s, err := NewServer(e, &ServerOptions{Logger: slog.New(h)})
	require.NoError(t, err)
	defer s.Stop()
	now := time.Unix(1_000_000, 0)
	s.failures.now = func() time.Time { return now }

	lost := fmt.Errorf("%w: the leader lost its leadership with the write in flight: %w", equeue.ErrIndeterminate, equeue.ErrNotLeader)
	info := &grpc.UnaryServerInfo{FullMethod: pb.Broker_Append_FullMethodName}
	ctx := context.Background()
	for range n / 2 {
		_, err := s.guard(ctx, &pb.AppendRequest{}, info, func(context.Context, any) (any, error) { return nil, lost })
		require.ErrorIs(t, fromStatus(err), equeue.ErrIndeterminate)
	}
	a := &appendStream{v: s.svc, wake: make(chan struct{}, 1)}
	for i := range n / 2 {
		a.done(uint64(i+1), equeue.AppendResult{}, lost)
	}
	lines := h.warnings("call failed")
	require.NotEmpty(t, lines, "the failures are logged")
	assert.LessOrEqual(t, len(lines), failureBurst, "Warn lines for %d failed appends", n)

	// An internal failure has lines of its own.
	_, _ = s.guard(ctx, &pb.AppendRequest{}, info, func(context.Context, any) (any, error) { return nil, fmt.Errorf("boom") })
	internal := h.warnings("call failed")[len(lines):]
	require.Len(t, internal, 1, "an internal failure amid the flood is logged")

	// Past the window, the next line says how many were left out.
	now = now.Add(failureWindow)
	a.done(n+1, equeue.AppendResult{}, lost)
	all := h.warnings("call failed")
	require.Len(t, all, len(lines)+2)
	left, ok := attr(all[len(all)-1], "suppressed")
	require.True(t, ok, "the line says how many were left out")
	assert.EqualValues(t, n-len(lines), left.Int64())
}
