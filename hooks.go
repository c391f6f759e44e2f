package equeue

import (
	"context"
	"time"
)

// Hooks observe sends and handling, for tracing and metrics. Every field is
// optional. Hooks must be fast and safe for concurrent use: they run on the
// caller's goroutine, except a SendAsync's AfterSend, which runs where the
// send completes (in process, the engine's writer, which a slow hook holds
// up for every send). A panic in a hook is not recovered (one in a send's
// BeforeSend reaches the caller, and SendAsync then leaves nothing for
// Producer.Close to wait for). Sends the producer refuses before routing
// (a closed producer, a bad topic name, an internal topic, a nil message
// or context) reach no hook.
type Hooks struct {
	// BeforeSend runs before a message is routed; it may set properties.
	BeforeSend func(ctx context.Context, m *Message)
	// AfterSend runs once the send has succeeded or failed.
	AfterSend func(ctx context.Context, m *Message, res SendResult, err error)
	// BeforeHandle runs before the handler gets a message.
	BeforeHandle func(ctx context.Context, m *Message)
	// AfterHandle runs after the handler returned (err is its error, or the
	// recovered panic as an error), with the time it took.
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

func (h hookList) beforeHandle(ctx context.Context, m *Message) {
	for _, x := range h {
		if x.BeforeHandle != nil {
			x.BeforeHandle(ctx, m)
		}
	}
}

func (h hookList) afterHandle(ctx context.Context, m *Message, err error, took time.Duration) {
	for _, x := range h {
		if x.AfterHandle != nil {
			x.AfterHandle(ctx, m, err, took)
		}
	}
}
