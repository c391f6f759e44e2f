package remote

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// records keeps every log record a handler receives.
type records struct {
	mu  sync.Mutex
	all []slog.Record
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }
func (r *records) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rec.Clone())
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

func attr(rec slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
			return false
		}
		return true
	})
	return v, found
}

// Refused calls are logged at Warn with method, peer and reason; a burst is
// cut at refusalBurst lines per window and the next window's first line
// counts what was left out.
func TestRefusalLog_RateLimited(t *testing.T) {
	rec := &records{}
	now := time.Unix(1_000_000, 0)
	r := newRefusalLog(slog.New(rec))
	r.now = func() time.Time { return now }
	refusal := errors.New("unknown token")

	for range refusalBurst + 5 {
		r.refused(context.Background(), "/equeue.v1.Broker/ListTopics", refusal)
	}
	require.Len(t, rec.all, refusalBurst, "a burst is cut")
	first := rec.all[0]
	assert.Equal(t, slog.LevelWarn, first.Level)
	assert.Equal(t, "call refused", first.Message)
	m, ok := attr(first, "method")
	require.True(t, ok)
	assert.Equal(t, "/equeue.v1.Broker/ListTopics", m.String())
	p, ok := attr(first, "peer")
	require.True(t, ok)
	assert.Equal(t, "unknown", p.String())
	_, ok = attr(first, "suppressed")
	assert.False(t, ok, "nothing was left out before the first line")

	now = now.Add(refusalWindow)
	r.refused(context.Background(), "/equeue.v1.Broker/Append", refusal)
	require.Len(t, rec.all, refusalBurst+1, "a new window logs again")
	s, ok := attr(rec.all[refusalBurst], "suppressed")
	require.True(t, ok)
	assert.Equal(t, int64(5), s.Int64())
}

// A flood of calls without a known token (a scanner, a client with a
// stale token in a loop) must not hide, in the same window, the line an
// operator acts on: a known token refused for lacking a right. Each
// reason has its own lines a window.
func TestRefusalLog_FloodOfUnknownTokensDoesNotHideADeniedRight(t *testing.T) {
	rec := &records{}
	now := time.Unix(1_000_000, 0) // one window for the whole test
	r := newRefusalLog(slog.New(rec))
	r.now = func() time.Time { return now }

	unknown := toStatus(fmt.Errorf("%w: unknown token", ErrUnauthenticated))
	for range 3 * refusalBurst {
		r.refused(context.Background(), "/equeue.v1.Broker/ListTopics", unknown)
	}
	denied := toStatus(fmt.Errorf("%w: Append needs produce rights, token has consume", ErrPermissionDenied))
	r.refused(context.Background(), "/equeue.v1.Broker/Append", denied)

	require.Len(t, rec.all, refusalBurst+1, "the flood is cut, the denied right is logged")
	last := rec.all[refusalBurst]
	m, ok := attr(last, "method")
	require.True(t, ok)
	assert.Equal(t, "/equeue.v1.Broker/Append", m.String())
	reason, ok := attr(last, "reason")
	require.True(t, ok)
	assert.Equal(t, "permission denied", reason.String())
	reason, ok = attr(rec.all[0], "reason")
	require.True(t, ok)
	assert.Equal(t, "unauthenticated", reason.String())

	now = now.Add(refusalWindow)
	r.refused(context.Background(), "/equeue.v1.Broker/ListTopics", unknown)
	s, ok := attr(rec.all[len(rec.all)-1], "suppressed")
	require.True(t, ok)
	assert.Equal(t, int64(2*refusalBurst), s.Int64(), "the flood's own left-out lines are counted with it")
}
