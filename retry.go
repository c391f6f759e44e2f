package equeue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultRetryDelays are the waits before each redelivery of a failed
// message in a clustering group: RocketMQ's delay levels from the third on
// (10 s, 30 s, 1 m, ... 2 h). Attempts beyond the list wait its last value.
var DefaultRetryDelays = []time.Duration{
	10 * time.Second, 30 * time.Second, time.Minute, 2 * time.Minute, 3 * time.Minute, 4 * time.Minute,
	5 * time.Minute, 6 * time.Minute, 7 * time.Minute, 8 * time.Minute, 9 * time.Minute, 10 * time.Minute,
	20 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
}

// ErrDeadLetter is matched (errors.Is) by errors made with DeadLetter.
var ErrDeadLetter = errors.New("equeue: send to dead letters")

type retryAfterError struct {
	d     time.Duration
	cause error
}

func (e *retryAfterError) Error() string {
	return fmt.Sprintf("retry after %v: %v", e.d, e.cause)
}
func (e *retryAfterError) Unwrap() error { return e.cause }

// RetryAfter returns a handler error that asks for the message to be
// delivered again after d (instead of the configured backoff). It still
// counts as a failed attempt.
func RetryAfter(d time.Duration, cause error) error {
	if cause == nil {
		cause = errors.New("retry requested")
	}
	return &retryAfterError{d: d, cause: cause}
}

type deadLetterError struct{ cause error }

func (e *deadLetterError) Error() string        { return "dead letter: " + fmt.Sprint(e.cause) }
func (e *deadLetterError) Unwrap() []error      { return []error{ErrDeadLetter, e.cause} }
func (e *deadLetterError) Is(target error) bool { return target == ErrDeadLetter }

// DeadLetter returns a handler error that sends the message straight to the
// group's dead-letter topic, with no further attempt.
func DeadLetter(cause error) error {
	if cause == nil {
		cause = errors.New("dead letter requested")
	}
	return &deadLetterError{cause: cause}
}

// System property names set by the engine on retried and dead-lettered messages.
const (
	SysOriginTopic  = "origin-topic"
	SysOriginQueue  = "origin-queue"
	SysOriginOffset = "origin-offset"
	SysLastError    = "last-error"
	// SysOriginPriority is the priority lane the message was stored in, on
	// a copy of a message of a topic with priorities: the lane of its
	// origin queue ID holds only while the topic keeps its lane count, and
	// one deleted and made again may have another when the copy is handled
	// or redriven (priority.go). A copy of a message of a topic without
	// priorities records none: its message had only the lowest lane.
	SysOriginPriority = "origin-priority"
	// SysOriginTopicID is the ID (TopicInfo.ID) of the origin topic when
	// the copy was made. A topic deleted and made again under its name
	// has another, so a retry copy of the old topic is not taken for a
	// message of the new one: the group's pull skips it (retryorigin.go).
	// Copies stored before the engine wrote it have none, and a Namespace
	// view's messages do not show it (it is the engine's count of topic
	// creations; see TopicInfo.ID).
	SysOriginTopicID = "origin-topic-id"
)

// retryDelay is the wait before the given attempt (1 = first retry).
func (c *Consumer) retryDelay(attempt int, cause error) time.Duration {
	var ra *retryAfterError
	if errors.As(cause, &ra) && ra.d >= 0 {
		return ra.d
	}
	ds := c.o.RetryDelays
	return ds[min(max(attempt, 1), len(ds))-1]
}

// localDelay is the wait before a message that failed with cause is
// handled again in place (orderly and broadcasting consumers, or after a
// failed send-back): the handler's RetryAfter, else LocalRetryDelay.
func (c *Consumer) localDelay(cause error) time.Duration {
	var ra *retryAfterError
	if errors.As(cause, &ra) && ra.d >= 0 {
		return ra.d
	}
	return c.o.RetryDelay
}

// origin returns the message as its handler should see it: a message
// from the retry topic shows its original topic, queue and offset.
func origin(m *Message) *Message {
	if !strings.HasPrefix(m.Topic, RetryTopicPrefix) {
		return m
	}
	return originView(m)
}

// derived returns a copy of view (the original-topic view of a message)
// addressed to topic, carrying its origin and the last error.
func derived(view *Message, topic string, attempts int, cause error) *Message {
	d := *view
	d.Topic = topic
	d.Attempt = attempts
	d.Delay, d.TTL, d.DeliverAt = 0, 0, time.Time{}
	d.sys = make(map[string]string, len(view.sys)+4)
	for k, v := range view.sys {
		d.sys[k] = v
	}
	if d.sys[SysOriginTopic] == "" {
		d.sys[SysOriginTopic] = view.Topic
		d.sys[SysOriginQueue] = strconv.Itoa(view.Queue)
		d.sys[SysOriginOffset] = strconv.FormatInt(view.Offset, 10)
	}
	if cause != nil {
		d.sys[SysLastError] = truncate(cause.Error(), 1024)
	}
	return &d
}

// sendBack stores a failed message in the group's retry topic, due after
// the backoff for its attempt.
func (c *Consumer) sendBack(ctx context.Context, view *Message, attempts int, cause error) error {
	_, err := c.b.SendBack(ctx, c.sendBackRequest(view, attempts, cause, false))
	return err
}

// deadLetter stores m in the group's dead-letter topic with the reason.
// done reports whether m is finished: stored there, or gone (see
// messageGone), when nothing is left to store.
func (c *Consumer) deadLetter(ctx context.Context, view *Message, attempts int, cause error) (done, gone bool) {
	res, err := c.b.SendBack(ctx, c.sendBackRequest(view, attempts, cause, true))
	if c.messageGone(view, err) {
		return true, true
	}
	if err != nil {
		c.log.Error("dead-letter failed; will retry", "topic", view.Topic, "offset", view.Offset, "err", err)
		return false, false
	}
	if res.Duplicate && res.Topic != DLQTopic(c.o.Group) {
		// Sent back for a retry before a crash: that copy stands, and the
		// handler meets the message again there.
		c.log.Warn("message not dead-lettered: an earlier retry of it is stored", "topic", view.Topic, "queue", view.Queue, "offset", view.Offset, "retry", res.Topic, "attempts", res.Attempts)
		return true, false
	}
	c.log.Warn("message dead-lettered", "topic", view.Topic, "queue", view.Queue, "offset", view.Offset, "attempts", attempts, "err", cause)
	return true, false
}

// messageGone reports whether err, a SendBack's error, says that the
// message was deleted from its queue (retention, or a topic limit that
// drops the oldest messages) while its handler ran. No send-back of it can
// ever be stored then, so retrying it locally would run the handler
// without end, past MaxAttempts, and pin the committed offset: the
// message is finished instead, as one deleted before it was pulled is
// skipped.
func (c *Consumer) messageGone(view *Message, err error) bool {
	if !errors.Is(err, ErrMessageDeleted) {
		return false
	}
	c.log.Warn("failed message was deleted from its queue; not retried", "topic", view.Topic, "queue", view.Queue, "offset", view.Offset, "err", err)
	return true
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// watchdogEvery is how often sendBackOverdue runs.
func (c *Consumer) watchdogEvery() time.Duration { return min(c.o.ConsumeTimeout/4, time.Second) }

// sendBackOverdue sends back messages whose handlers outlive ConsumeTimeout,
// so the committed offset can move past them. The handler keeps running;
// its result is ignored.
func (c *Consumer) sendBackOverdue() {
	c.mu.Lock()
	rs := make([]*runner, 0, len(c.runners))
	for _, r := range c.runners {
		rs = append(rs, r)
	}
	c.mu.Unlock()
	for _, r := range rs {
		for _, m := range r.pq.overdue(c.o.ConsumeTimeout) {
			r.sendBackStuck(m)
		}
	}
}

// sendBackStuck sends back m, whose handler outlived ConsumeTimeout. It is
// a failure path like the handler's own (see beginDispose): a handover's
// drain that gives up on the stuck handler waits for this send-back, so its
// commit passes m once the copy is stored, or it is never started. For the
// same reason it runs under its own deadline, not the handlers' context,
// which that drain cancels while the copy may still be written.
func (r *runner) sendBackStuck(m *Message) {
	c := r.c
	if r.abandoned.Load() || !r.beginDispose() {
		return
	}
	defer r.endDispose()
	if r.pq.isDone(m.Offset) {
		return // its handler returned meanwhile
	}
	ctx, cancel := context.WithTimeout(c.ctx, sendBackTimeout)
	defer cancel()
	view := origin(m)
	cause := fmt.Errorf("consume timeout: handler ran longer than %v", c.o.ConsumeTimeout)
	attempts := m.Attempt + 1
	var stored bool
	if attempts >= c.o.MaxAttempts {
		stored, _ = c.deadLetter(ctx, view, attempts, cause)
	} else if err := c.sendBack(ctx, view, attempts, cause); err == nil || c.messageGone(view, err) {
		stored = true
	} else {
		c.log.Warn("send-back of a stuck message failed", "err", err)
	}
	if stored {
		c.log.Warn("handler stuck; message sent back", "topic", view.Topic, "offset", view.Offset, "timeout", c.o.ConsumeTimeout)
		r.pq.expire(m.Offset)
	}
}
