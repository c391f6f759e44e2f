package main

import (
	"context"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// forceKey is the context key of the context that a second signal ends.
type forceKey struct{}

// feedKey is the context key of the signalFeed of every signal.
type feedKey struct{}

// notifySignals returns a context that the first SIGINT or SIGTERM ends,
// carrying another (see forced) that a second one ends and a feed of every
// signal (see nextSignal), and the function that stops listening for them.
// Commands stop cleanly at the first signal; serve, whose clean stop may
// wait for calls in progress, cuts that wait at the second, and stops
// waiting for its engine's close at a signal that comes during it.
func notifySignals() (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancel(context.Background())
	force, forceNow := context.WithCancel(context.Background())
	feed := newSignalFeed()
	done := make(chan struct{})
	go func() {
		for n := 0; ; n++ {
			select {
			case <-sigs:
			case <-done:
				return
			}
			// The feed first: a context ended by a signal (ctx, forced)
			// is seen with the feed already past that signal.
			feed.arrived()
			if n == 0 {
				stop()
			} else {
				forceNow()
			}
		}
	}()
	ctx = context.WithValue(ctx, forceKey{}, force)
	return context.WithValue(ctx, feedKey{}, feed), func() {
		signal.Stop(sigs)
		close(done)
		stop()
		forceNow()
	}
}

// forced returns the context that a second signal ends, or one that never
// ends when ctx carries none (a command run in-process, as by the tests).
func forced(ctx context.Context) context.Context {
	if f, ok := ctx.Value(forceKey{}).(context.Context); ok {
		return f
	}
	return context.Background()
}

// nextSignal returns a context that the first signal after this call
// ends, or one that never ends when ctx carries no signals (a command run
// in-process, as by the tests).
func nextSignal(ctx context.Context) context.Context {
	if f, ok := ctx.Value(feedKey{}).(*signalFeed); ok {
		return f.next()
	}
	return context.Background()
}

// signalFeed tells waiters of the next signal: each signal ends the
// context next returned before it and starts another.
type signalFeed struct {
	mu     sync.Mutex
	ctx    context.Context
	cancel context.CancelFunc
}

func newSignalFeed() *signalFeed {
	f := &signalFeed{}
	f.ctx, f.cancel = context.WithCancel(context.Background())
	return f
}

// next returns the context that the next signal ends.
func (f *signalFeed) next() context.Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ctx
}

// arrived ends the waiters' context and starts the next one.
func (f *signalFeed) arrived() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancel()
	f.ctx, f.cancel = context.WithCancel(context.Background())
}
