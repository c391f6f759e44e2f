package equeue_test

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// capturedLogs is a slog handler keeping every record.
type capturedLogs struct {
	mu      sync.Mutex
	records []slog.Record
}

func (h *capturedLogs) Enabled(context.Context, slog.Level) bool { return true }
func (h *capturedLogs) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, r.Clone())
	return nil
}
func (h *capturedLogs) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *capturedLogs) WithGroup(string) slog.Handler      { return h }

// find returns the attributes of the first record with message msg whose
// attributes have want among them, and whether there is one.
func (h *capturedLogs) find(msg string, want map[string]any) (map[string]any, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.records {
		if r.Message != msg {
			continue
		}
		attrs := map[string]any{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.Any(); return true })
		ok := true
		for k, v := range want {
			ok = ok && attrs[k] == v
		}
		if ok {
			return attrs, true
		}
	}
	return nil, false
}

// failOwedWrites fails each store write that holds what retention owes of
// a queue (its "owed/" key).
func failOwedWrites(b *store.Batch) error {
	if slices.ContainsFunc(b.Meta, func(op store.MetaOp) bool { return bytes.HasPrefix(op.Key, []byte("owed/")) }) {
		return store.ErrNoSpace
	}
	return nil
}

// A background retention pass that fails after a cut whose delete failed
// logs, beside its error, what it owes: the topic and its messages left
// below the watermark, uncounted, and whether that is stored for a reopen.
func TestRetention_FailedPassLogsWhatItOwes(t *testing.T) {
	logs := &capturedLogs{}
	r := newFaultRig(t, "memory", &equeue.Options{Logger: slog.New(logs),
		Retention: equeue.RetentionPolicy{Interval: 10 * time.Millisecond, MaxAge: time.Nanosecond}})
	var failing atomic.Bool
	failing.Store(true)
	r.FS.OnDeleteRange(func(store.QueueID, uint64, uint64) error {
		if failing.Load() {
			return store.ErrNoSpace
		}
		return nil
	})
	r.FS.OnWrite(failOwedWrites)
	ctx := ctxT(t)
	require.NoError(t, r.E.CreateTopic(ctx, "t", 1))
	_, err := r.E.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
	require.NoError(t, err)
	var attrs map[string]any
	eventually(t, waitLong, func() bool {
		var ok bool
		attrs, ok = logs.find("retention owes messages a failed delete left", map[string]any{"topic": "t"})
		return ok
	}, "a failed pass logs what it owes")
	failing.Store(false)
	r.FS.OnWrite(nil)
	assert.Equal(t, int64(3), attrs["messages"])
	assert.Equal(t, false, attrs["stored"], "the store refused to keep it")
	_, ok := logs.find("retention pass failed", nil)
	assert.True(t, ok, "the error is logged too")
}

// What a failed pass owes, kept in memory only because the store refused
// its write, is stored by the next pass that fails too, so a reopen
// still counts it.
func TestRetention_OwedCountSurvivesAFailedWriteOfIt(t *testing.T) {
	ctx := ctxT(t)
	r := newFaultRig(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, r.E.CreateTopic(ctx, "t", 1))
	_, err := r.E.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
	require.NoError(t, err)
	late := time.Now().Add(time.Hour)
	r.FS.OnWrite(failOwedWrites)
	r.FS.FailDeletes(1)
	res, err := equeue.ApplyRetentionAt(ctx, r.E, equeue.RetentionPolicy{MaxAge: time.Minute}, late)
	require.Error(t, err)
	require.Zero(t, res.Deleted)
	r.FS.OnWrite(nil)
	r.FS.FailDeletes(1) // the next pass fails too, at its sweep
	res, err = equeue.ApplyRetentionAt(ctx, r.E, equeue.RetentionPolicy{MaxAge: -1}, late)
	require.Error(t, err)
	require.Zero(t, res.Deleted)

	e := r.reopen()
	res, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: -1}, late)
	require.NoError(t, err)
	assert.Equal(t, int64(3), res.Deleted, "the reopen kept what retention owed")
}
