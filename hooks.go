package equeue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
)

// Hooks observe sends and handling, for tracing and metrics. Every field is
// optional. Hooks must be fast and safe for concurrent use: a send's run on
// the caller's goroutine, except a SendAsync's AfterSend (and its trace's
// end), which runs once the send completes on a goroutine of the
// producer's, one send after another, also when one calls
// Producer.Close (a slow hook holds up the futures of that producer's
// later sends, not the engine); a Consumer's run on the
// consumer's goroutines. Sends the producer refuses before routing (a
// closed producer, a bad topic name, an internal topic, a nil message or
// context) reach no hook.
//
// A panic in a hook that runs on the caller's goroutine reaches the caller
// (one in a SendAsync's BeforeSend leaves nothing for Producer.Close to wait
// for); when it stops a send that a trace hook's StartSend began, the
// send's trace ends first, with no results and the panic as an error
// matching ErrHookPanic, and so it does when such a hook calls
// runtime.Goexit, which goes on ending the caller's goroutine. Chained
// trace ends all run there: only the first panic reaches the caller, its
// value unchanged, and an end that panics after it is recovered and
// counted (Stats.ConsumerHookPanics). One elsewhere is recovered as an
// error matching ErrHookPanic, and the other hooks (chained trace ends
// included) still run, every panic reported and counted: a SendAsync's
// future reports it, joined to the send's own error, with the send's
// SendResult unchanged (filled in when the message was stored); a
// Consumer logs it, and the message's outcome is its handler's.
//
// Hooks must not call runtime.Goexit, as testing's t.FailNow does (and so
// require's assertions): recover cannot stop it, and it ends the goroutine
// that runs the hook, whatever that goroutine was doing. On the caller's
// goroutine it ends the caller's goroutine, as above. Elsewhere it is
// reported as a panic is, an error matching ErrHookPanic that names the
// hook, and counted, but what the goroutine was doing stops there: a
// SendAsync's future fails with it (and the engine logs it), and later
// sends complete as before: its hooks run on a goroutine of the
// producer's, never on one of the engine's. A Consumer logs it and leaves
// the message unfinished, for the queue's next owner to get again: a
// concurrent consumer goes on with its other messages, an orderly one
// stops pulling the queue until Close or a rebalance hands it on. In a
// test, report a hook's failure with t.Error and return.
type Hooks struct {
	// BeforeSend runs before a message is routed; it may set properties.
	BeforeSend func(ctx context.Context, m *Message)
	// AfterSend runs once the send has succeeded or failed.
	AfterSend func(ctx context.Context, m *Message, res SendResult, err error)
	// BeforeHandle runs before the handler gets a message.
	BeforeHandle func(ctx context.Context, m *Message)
	// AfterHandle runs after the handler returned (err is its error, or the
	// recovered panic as an error), with the time it took: for a
	// BatchHandler, the call's time divided by the batch's size, once for
	// each message, so a batch's times add up to its call.
	AfterHandle func(ctx context.Context, m *Message, err error, took time.Duration)
	// Trace, when set, traces sends and handling (see TraceHooks).
	Trace *TraceHooks
}

type hookList []Hooks

func (h hookList) beforeSend(ctx context.Context, m *Message) {
	for _, x := range h {
		if x.BeforeSend != nil {
			x.BeforeSend(ctx, m)
		}
	}
}

func (h hookList) afterSend(ctx context.Context, m *Message, res SendResult, err error) {
	for _, x := range h {
		if x.AfterSend != nil {
			x.AfterSend(ctx, m, res, err)
		}
	}
}

// afterSendRecovered is afterSend for a SendAsync, whose AfterSend hooks
// run on the engine's or the producer's goroutines: it recovers a hook that
// panics, runs the others, and returns the panics as errors.
func (h hookList) afterSendRecovered(ctx context.Context, m *Message, res SendResult, err error) (perr error) {
	for _, x := range h {
		if x.AfterSend != nil {
			perr = errors.Join(perr, recovered("AfterSend", func() { x.AfterSend(ctx, m, res, err) }))
		}
	}
	return perr
}

// beforeHandle runs the BeforeHandle hooks, which run on the consumer's
// goroutines: it recovers a hook that panics, runs the others, and returns
// the panics as errors.
func (h hookList) beforeHandle(ctx context.Context, m *Message) (perr error) {
	for _, x := range h {
		if x.BeforeHandle != nil {
			perr = errors.Join(perr, recovered("BeforeHandle", func() { x.BeforeHandle(ctx, m) }))
		}
	}
	return perr
}

// afterHandle runs the AfterHandle hooks as beforeHandle runs BeforeHandle.
func (h hookList) afterHandle(ctx context.Context, m *Message, err error, took time.Duration) (perr error) {
	for _, x := range h {
		if x.AfterHandle != nil {
			perr = errors.Join(perr, recovered("AfterHandle", func() { x.AfterHandle(ctx, m, err, took) }))
		}
	}
	return perr
}

// recovered calls hook, the user's function named name, and returns its
// panic as an error matching ErrHookPanic, with the panic's value and
// stack; nil when it returned.
func recovered(name string, hook func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %s: %v\n%s", ErrHookPanic, name, p, debug.Stack())
		}
	}()
	hook()
	return nil
}

// goexitError is the error reported for a hook, the user's function named
// name, that called runtime.Goexit (as testing's t.FailNow does) where its
// panics are recovered: recover cannot stop a Goexit, which goes on ending
// the goroutine, so the deferred check of the code that ran the hook
// reports it instead (see Hooks).
func goexitError(name string) error {
	return fmt.Errorf("%w: %s: runtime.Goexit called\n%s", ErrHookPanic, name, debug.Stack())
}

// withHookErr is a send's error err with the panics of its hooks, perr.
func withHookErr(err, perr error) error {
	if perr == nil {
		return err // as it is, not wrapped in a join
	}
	return errors.Join(err, perr)
}
