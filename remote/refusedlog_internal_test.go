package remote

import (
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// debugs returns the Debug records of r with message msg.
func (r *records) debugs(msg string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.all {
		if rec.Level == slog.LevelDebug && rec.Message == msg {
			out = append(out, rec)
		}
	}
	return out
}

// A client sending 10k appends on a stream that the server refuses (a
// follower refusing each as not the leader) made the server log a Debug
// line per append. These lines are now bounded per window and per kind
// of refusal, the next line saying how many were left out, and a refusal
// of another kind still gets its own lines.
func TestServer_RefusedStreamAppendsDoNotFloodTheLog(t *testing.T) {
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

	a := &appendStream{v: s.svc, wake: make(chan struct{}, 1)}
	for i := range n {
		a.done(uint64(i+1), equeue.AppendResult{}, fmt.Errorf("%w: follower", equeue.ErrNotLeader))
	}
	lines := h.debugs("call failed")
	require.NotEmpty(t, lines, "the refusals are logged")
	assert.LessOrEqual(t, len(lines), failureBurst, "at most a burst of lines per window")

	a.done(n+1, equeue.AppendResult{}, fmt.Errorf("%w: topic t", equeue.ErrTopicNotFound))
	other := h.debugs("call failed")[len(lines):]
	require.Len(t, other, 1, "a refusal of another kind is not hidden by the flood")

	now = now.Add(failureWindow)
	a.done(n+2, equeue.AppendResult{}, fmt.Errorf("%w: follower", equeue.ErrNotLeader))
	all := h.debugs("call failed")
	require.Len(t, all, len(lines)+2, "the next window logs again")
	v, ok := attr(all[len(all)-1], "suppressed")
	require.True(t, ok, "the next line says how many were left out")
	assert.Equal(t, int64(n-len(lines)), v.Int64())
}
