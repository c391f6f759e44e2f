package equeue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// TraceHooks let a tracer follow a message from the send that produced it,
// through retries and delays, to the handler that finished it. Set them in
// Hooks.Trace; the package equeue/otel implements them with OpenTelemetry,
// carrying the trace context in message properties so it crosses remote
// brokers unchanged. Every field is optional.
//
// Unlike the other hooks, these return the context the send or the handler
// runs in, and a function that ends what they started. Without them, sends
// and handling carry no tracing cost.
type TraceHooks struct {
	// StartSend runs once per Send, SendAsync or SendBatch, after the call's
	// arguments were checked and before its messages are routed; msgs are
	// the call's messages (one, or the batch). It may set their Properties,
	// replacing the map rather than writing into it (the caller may share
	// it). The returned context is the send's; end, when not nil, is called
	// once with one result per message (zero results when err is not nil)
	// when the send would return, or when a hook that runs on the caller's
	// goroutine panicked (see Hooks).
	StartSend func(ctx context.Context, msgs []*Message) (_ context.Context, end func(res []SendResult, err error))
	// StartHandle runs before a Consumer's handler gets m (m shows the
	// original topic, queue and offset of a retried message, and its
	// Attempt). The handler runs with the returned context; end, when not
	// nil, is called once when this attempt's outcome is decided: after
	// the handler returned and a failed message was stored for a retry or
	// in the dead letters (or scheduled for a local retry).
	StartHandle func(ctx context.Context, m *Message, d Delivery) (_ context.Context, end func(HandleOutcome))
}

// Delivery says which consumer handles a message, for TraceHooks.
type Delivery struct {
	// Group is the consumer group.
	Group string
	// Consumer is the member ID.
	Consumer string
	// Model is the group's message model.
	Model MessageModel
}

// Outcome is what follows one handling attempt of a message.
type Outcome int

const (
	// OutcomeHandled: the handler succeeded; the message is done.
	OutcomeHandled Outcome = iota
	// OutcomeRetry: the message was stored in the group's retry topic and
	// is delivered again after HandleOutcome.Delay.
	OutcomeRetry
	// OutcomeRetryLocal: the consumer handles the message again itself after
	// HandleOutcome.Delay (orderly mode, broadcasting groups, or a retry or
	// dead-letter store that failed).
	OutcomeRetryLocal
	// OutcomeDeadLetter: the message was stored in the group's dead letters.
	OutcomeDeadLetter
	// OutcomeUnfinished: the consumer stopped or lost the queue before the
	// outcome was stored; the message is delivered again to the queue's
	// next owner. Also reported when the consume timeout had already sent
	// the message back while its handler still ran.
	OutcomeUnfinished
	// OutcomeDeleted: the message failed, but retention or a topic limit
	// had deleted it from its queue meanwhile, so it could be stored
	// neither in the retry topic nor in the dead letters
	// (ErrMessageDeleted); it is not handled again, as a message deleted
	// before it was pulled is not delivered.
	OutcomeDeleted
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case OutcomeHandled:
		return "handled"
	case OutcomeRetry:
		return "retry"
	case OutcomeRetryLocal:
		return "retry-local"
	case OutcomeDeadLetter:
		return "dead-letter"
	case OutcomeUnfinished:
		return "unfinished"
	case OutcomeDeleted:
		return "deleted"
	}
	return "unknown"
}

// HandleOutcome describes the end of one handling attempt, for TraceHooks.
type HandleOutcome struct {
	// Err is the handler's error (a panic as ErrHandlerPanic); nil when it
	// succeeded.
	Err error
	// Outcome is what follows.
	Outcome Outcome
	// Attempts counts the handler runs of the message so far, this one
	// included.
	Attempts int
	// Delay is the wait before the next attempt (OutcomeRetry and
	// OutcomeRetryLocal).
	Delay time.Duration
	// StoreErr is why storing the message in the retry topic failed, when
	// that turned an OutcomeRetry into an OutcomeRetryLocal.
	StoreErr error
}

// tracing reports whether any hook traces sends or handling.
func (h hookList) tracing() bool {
	for _, x := range h {
		if x.Trace != nil {
			return true
		}
	}
	return false
}

// startSend runs the StartSend hooks in order, each in the context the
// previous one returned, and returns their ends. Without trace hooks it
// returns ctx and a nil end, at no cost. When a StartSend panics, or calls
// runtime.Goexit, the ends the earlier ones returned are called as by
// endIfPanicking, so that what they started (a span) is not left open,
// and the panic goes on to the caller; panics counts an end that panics
// too.
func (h hookList) startSend(ctx context.Context, panics *atomic.Uint64, msgs ...*Message) (_ context.Context, end sendEnd) {
	started := false
	defer func() {
		if !started && len(end) > 0 {
			end.abandon(recover(), panics)
		}
	}()
	for _, x := range h {
		if x.Trace == nil || x.Trace.StartSend == nil {
			continue
		}
		var e func(res []SendResult, err error)
		ctx, e = x.Trace.StartSend(ctx, msgs)
		if e != nil {
			end = append(end, e)
		}
	}
	started = true
	return ctx, end
}

// traceSend is startSend for one message, without allocating when nothing
// traces.
func (h hookList) traceSend(ctx context.Context, panics *atomic.Uint64, m *Message) (context.Context, sendEnd) {
	if !h.tracing() {
		return ctx, nil
	}
	return h.startSend(ctx, panics, m)
}

// sendEnd ends a traced send: the ends its StartSend hooks returned, in
// the order they started; a nil sendEnd does nothing.
type sendEnd []func(res []SendResult, err error)

// call ends the send on the caller's goroutine, calling the ends in
// reverse order. When one panics (or calls runtime.Goexit), the ends not
// yet called still run, each that panics too recovered and counted in
// panics, and the first panic goes on to the caller, its value and stack
// unchanged (see Hooks).
func (e sendEnd) call(res []SendResult, err error, panics *atomic.Uint64) {
	i := len(e) - 1
	defer func() {
		if i >= 0 { // e[i] did not return
			countHookPanics(panics, e[:i].endRecovered(res, err))
		}
	}()
	for ; i >= 0; i-- {
		e[i](res, err)
	}
}

// one ends a send of one message on the caller's goroutine.
func (e sendEnd) one(res SendResult, err error, panics *atomic.Uint64) {
	if len(e) > 0 {
		e.call([]SendResult{res}, err, panics)
	}
}

// endRecovered ends the send where no panic may escape (a SendAsync's
// completion): it calls the ends in reverse order, recovers each that
// panics, and returns every panic as an error.
func (e sendEnd) endRecovered(res []SendResult, err error) (perr error) {
	for i := len(e) - 1; i >= 0; i-- {
		perr = errors.Join(perr, recovered("TraceHooks.StartSend end", func() { e[i](res, err) }))
	}
	return perr
}

// endIfPanicking is deferred by a send whose hooks run on the caller's
// goroutine. When one of them (a BeforeSend, or a Send's or SendBatch's
// AfterSend) panics, or calls runtime.Goexit, before the send has called
// its end (*ended false), it ends the send, so that what StartSend began
// (a span) is not left open: the ends get no results and an error
// matching ErrHookPanic, with the panic's value. An end that panics too is
// recovered and counted in panics; the hook's panic goes on to the caller,
// and a runtime.Goexit goes on ending the caller's goroutine (see Hooks).
func (e sendEnd) endIfPanicking(ended *bool, panics *atomic.Uint64) {
	if len(e) == 0 || *ended {
		return
	}
	e.abandon(recover(), panics)
}

// abandon ends a send that a hook stopped on the caller's goroutine, p
// being its panic's value (nil for a runtime.Goexit), as endIfPanicking
// says, and passes the panic on.
func (e sendEnd) abandon(p any, panics *atomic.Uint64) {
	why := fmt.Sprint(p)
	if p == nil { // not a panic: runtime.Goexit
		why = "runtime.Goexit called"
	}
	countHookPanics(panics, e.endRecovered(nil, fmt.Errorf("%w: %s\n%s", ErrHookPanic, why, debug.Stack())))
	if p != nil {
		panic(p)
	}
}

// startHandle runs the StartHandle hooks like startSend, and returns
// their ends in the order they started. They run on the consumer's
// goroutines: one that panics is recovered and left out (the context stays
// the previous one's, and it has no end), and its panic returned as an
// error.
func (h hookList) startHandle(ctx context.Context, m *Message, d Delivery) (context.Context, []handleEnd, error) {
	var (
		ends []handleEnd
		perr error
	)
	for _, x := range h {
		if x.Trace == nil || x.Trace.StartHandle == nil {
			continue
		}
		var (
			hctx context.Context
			e    handleEnd
		)
		if err := recovered("TraceHooks.StartHandle", func() { hctx, e = x.Trace.StartHandle(ctx, m, d) }); err != nil {
			perr = errors.Join(perr, err)
			continue
		}
		ctx = hctx
		if e != nil {
			ends = append(ends, e)
		}
	}
	return ctx, ends, perr
}

// handleEnd ends a traced handling attempt; a nil handleEnd does nothing.
type handleEnd func(HandleOutcome)

func (e handleEnd) end(o HandleOutcome) {
	if e != nil {
		e(o)
	}
}

// traceHandle starts tracing the handling of m by c. Its end calls the
// StartHandle hooks' ends in reverse order. A StartHandle, or an end, that
// panics is recovered, and the others still run; every panic is logged
// and counted (see Hooks), and so is one that calls runtime.Goexit.
func (c *Consumer) traceHandle(ctx context.Context, m *Message) (context.Context, handleEnd) {
	if !c.hooks.tracing() {
		return ctx, nil
	}
	var ends []handleEnd
	c.runHooks(m, "TraceHooks.StartHandle", func() (err error) {
		ctx, ends, err = c.hooks.startHandle(ctx, m, Delivery{Group: c.o.Group, Consumer: c.o.ID, Model: c.o.Model})
		return err
	})
	if len(ends) == 0 {
		return ctx, nil
	}
	return ctx, func(o HandleOutcome) {
		c.runHooks(m, "TraceHooks.StartHandle end", func() (perr error) {
			for i := len(ends) - 1; i >= 0; i-- {
				perr = errors.Join(perr, recovered("TraceHooks.StartHandle end", func() { ends[i](o) }))
			}
			return perr
		})
	}
}

// batchResults lists the per-message results of a batch append, for
// StartSend's end: zero results when err is not nil.
func batchResults(topic string, ar AppendResult, n int, err error) []SendResult {
	res := make([]SendResult, n)
	for i := range res {
		res[i].Topic = topic
		if err == nil {
			res[i] = sendResult(topic, ar, i)
		}
	}
	return res
}

func outcomeIf(ok bool, yes, no Outcome) Outcome {
	if ok {
		return yes
	}
	return no
}
