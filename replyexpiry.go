package equeue

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultReplyTopicIdleTTL is how long a reply topic may go without a reader
// before the engine deletes it, when Options.ReplyTopicIdleTTL is zero.
const DefaultReplyTopicIdleTTL = 10 * time.Minute

// replyReads tracks the reads of a reply topic, so that the topic of a
// requester that died without closing (no Producer.Close to delete it) can be
// told apart from one whose listener waits: a live listener always has a
// pull running or just finished.
type replyReads struct {
	// mu orders the start of a pull against the expiry's last check and
	// deletion (deleteIfIdle): a pull that starts while the topic is
	// being deleted waits for the deletion and then finds the topic gone,
	// and one that started before keeps the topic.
	mu      sync.Mutex
	running atomic.Int32
	last    atomic.Int64 // unix nanoseconds of the last pull's start or end
}

// begin marks a pull of t as running; the returned function ends it. It
// returns false, and marks nothing, when t was deleted.
func (r *replyReads) begin(t *topic) (end func(), ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.deleted.Load() {
		return nil, false
	}
	r.running.Add(1)
	r.last.Store(time.Now().UnixNano())
	return func() {
		r.last.Store(time.Now().UnixNano())
		r.running.Add(-1)
	}, true
}

// idleSince reports when the topic's last pull ended (or since, when none
// has run), and false while a pull runs.
func (r *replyReads) idleSince(since time.Time) (time.Time, bool) {
	if r.running.Load() > 0 {
		return time.Time{}, false
	}
	if n := r.last.Load(); n > since.UnixNano() {
		return time.Unix(0, n), true
	}
	return since, true
}

// isReplyTopicName reports whether name is a reply topic of the engine or of
// one of its namespaces.
func isReplyTopicName(name string) bool { return strings.HasPrefix(name, ReplyTopicPrefix) }

// runReplyExpiry deletes reply topics nobody has read for the TTL, until the
// engine closes. Reads are tracked in memory: after a restart a topic's idle
// time counts from Open.
func (e *Engine) runReplyExpiry() {
	ttl := e.opts.ReplyTopicIdleTTL
	opened := time.Now()
	t := time.NewTicker(min(max(ttl/4, 10*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-e.closing:
			return
		case now := <-t.C:
			e.expireReplyTopics(now, opened, ttl)
		}
	}
}

// expireReplyTopics deletes the reply topics idle for ttl at now.
func (e *Engine) expireReplyTopics(now, opened time.Time, ttl time.Duration) {
	var replies []*topic
	e.mu.RLock()
	for name, t := range e.topics {
		if isReplyTopicName(name) {
			replies = append(replies, t)
		}
	}
	e.mu.RUnlock()
	for _, t := range replies {
		name := t.name
		since, idle := t.replyReads.idleSince(later(opened, t.created))
		if !idle || now.Sub(since) < ttl {
			continue
		}
		if h := e.replyExpiryHook.Load(); h != nil {
			(*h)(name)
		}
		idleFor, err := e.deleteIfIdle(t, now, later(opened, t.created), ttl)
		switch {
		case idleFor == 0: // a pull came, or the topic is another one now
		case err == nil:
			e.log.Info("idle reply topic deleted", "topic", name, "idle", idleFor)
		case errors.Is(err, ErrTopicNotFound), errors.Is(err, ErrClosed):
		default:
			e.log.Warn("deleting an idle reply topic; retried on the next check", "topic", name, "err", err)
		}
	}
}

// deleteIfIdle deletes reply topic t if it is still idle for ttl at now
// (idle time counted from since at the earliest), and returns how long it
// was idle, or 0 when it was not deleted for not being idle. The check
// above it was made without a lock: a requester's pull may have come since,
// so the check is made again under t.replyReads.mu, which a pull takes to
// start, and kept until the topic is gone. Only t itself is deleted: a
// reply topic of the same name made since is a fresh one.
func (e *Engine) deleteIfIdle(t *topic, now, since time.Time, ttl time.Duration) (time.Duration, error) {
	t.replyReads.mu.Lock()
	defer t.replyReads.mu.Unlock()
	last, idle := t.replyReads.idleSince(since)
	if !idle || now.Sub(last) < ttl {
		return 0, nil
	}
	if err := e.deleteTopic(e.bgCtx, t.name, t); err != nil {
		if errors.Is(err, errOtherIncarnation) {
			return 0, nil
		}
		return now.Sub(last), err
	}
	return now.Sub(last), nil
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
