package equeue_test

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// logTimes is a slog.Handler that notes when each message was first
// logged, per value of its "group" and "member" attributes. The time is
// read as the record is handled, so it comes after whatever the engine
// did before logging it: a lower bound a slow machine can only raise.
type logTimes struct {
	mu sync.Mutex
	at map[logKey]time.Time
}

// logKey names a message of logTimes with its group and member.
type logKey struct{ msg, group, member string }

// newLogTimes returns an empty logTimes.
func newLogTimes() *logTimes { return &logTimes{at: map[logKey]time.Time{}} }

// Enabled takes every level: the engine logs its deletions at Info.
func (l *logTimes) Enabled(context.Context, slog.Level) bool { return true }

// Handle notes when r was handled, unless its key was seen before.
func (l *logTimes) Handle(_ context.Context, r slog.Record) error {
	now := time.Now()
	k := logKey{msg: r.Message}
	r.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "group":
			k.group = a.Value.String()
		case "member":
			k.member = a.Value.String()
		}
		return true
	})
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, seen := l.at[k]; !seen {
		l.at[k] = now
	}
	return nil
}

// WithAttrs drops attrs: only those of each call are keyed.
func (l *logTimes) WithAttrs([]slog.Attr) slog.Handler { return l }

// WithGroup ignores the group name.
func (l *logTimes) WithGroup(string) slog.Handler { return l }

// first returns when msg was first logged for group and member.
func (l *logTimes) first(msg, group, member string) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.at[logKey{msg, group, member}]
	return at, ok
}
