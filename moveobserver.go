package equeue

import (
	"context"
	"time"
)

// MoveObserver is an Observer that also hears of the messages the engine
// itself stores anew: a failed message sent back to its group's retry topic
// or dead letters, and a delayed message made visible in its queue. A
// tracer uses it to show the broker's part of a message's trace (package
// equeue/otel). The engine finds it by type assertion on Options.Observer;
// without it, nothing is decoded or reported. ObserveMove must be fast and
// safe for concurrent use.
type MoveObserver interface {
	Observer
	// ObserveMove is called once per message the engine stored anew.
	ObserveMove(ctx context.Context, ev MoveEvent)
}

// MoveKind says what the engine moved.
type MoveKind int

const (
	// MoveRetry: a failed message was stored in %RETRY%<group>.
	MoveRetry MoveKind = iota
	// MoveDeadLetter: a failed message was stored in %DLQ%<group>.
	MoveDeadLetter
	// MoveDelayDue: a delayed message became visible in its queue.
	MoveDelayDue
)

// String names the kind.
func (k MoveKind) String() string {
	switch k {
	case MoveRetry:
		return "retry"
	case MoveDeadLetter:
		return "dead-letter"
	case MoveDelayDue:
		return "delay-due"
	}
	return "unknown"
}

// MoveEvent describes one message the engine stored anew.
type MoveEvent struct {
	// Kind says why the message was stored anew.
	Kind MoveKind
	// Message is the message as stored: its topic is the retry or
	// dead-letter topic (original topic, queue and offset in its system
	// properties) or, for MoveDelayDue, its own topic, with its queue and
	// offset. It must not be modified.
	Message *Message
	// Group is the consumer group of a retry or dead letter.
	Group string
	// Start is when the engine began the move.
	Start time.Time
	// Err is why storing failed (then nothing was stored, or the outcome
	// is unknown, as for the engine's other writes).
	Err error
}

// moveObserver returns the engine's MoveObserver, nil when there is none.
func (e *Engine) moveObserver() MoveObserver {
	mo, _ := e.opts.Observer.(MoveObserver)
	return mo
}

// observeSendBack reports a send-back of d for group.
func (e *Engine) observeSendBack(ctx context.Context, req *SendBackRequest, d *Message, start time.Time, err error) {
	if mo := e.moveObserver(); mo != nil {
		kind := MoveRetry
		if req.DeadLetter {
			kind = MoveDeadLetter
		}
		mo.ObserveMove(ctx, MoveEvent{Kind: kind, Message: d, Group: req.Group, Start: start, Err: err})
	}
}

// observeDue reports a delayed message moved into its queue by c.
func (e *Engine) observeDue(mo MoveObserver, c *command, start time.Time) {
	m, err := decodeRecord(c.recs[0])
	if err != nil {
		return // the move stored it; a record that does not decode is not reported
	}
	m.Topic, m.Queue, m.Offset = c.q.topic.name, c.q.id, c.first
	mo.ObserveMove(e.bgCtx, MoveEvent{Kind: MoveDelayDue, Message: m, Start: start})
}
