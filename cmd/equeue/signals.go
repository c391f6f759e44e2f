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
			if n == 0 {
				stop()
			} else {
				forceNow()
			}
			feed.arrived()
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

// nextSignal returns a channel closed at the first signal after this call,
// or nil (it never is) when ctx carries no signals (a command run
// in-process, as by the tests).
func nextSignal(ctx context.Context) <-chan struct{} {
	if f, ok := ctx.Value(feedKey{}).(*signalFeed); ok {
		return f.next()
	}
	return nil
}

// signalFeed tells waiters of the next signal: each signal closes the
// channel next returned before it and starts another.
type signalFeed struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignalFeed() *signalFeed { return &signalFeed{ch: make(chan struct{})} }

// next returns the channel that the next signal closes.
func (f *signalFeed) next() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ch
}

// arrived closes the waiters' channel and starts the next one.
func (f *signalFeed) arrived() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.ch)
	f.ch = make(chan struct{})
}
