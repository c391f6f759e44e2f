package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

// forceKey is the context key of the context that a second signal ends.
type forceKey struct{}

// notifySignals returns a context that the first SIGINT or SIGTERM ends,
// carrying another (see forced) that a second one ends, and the function
// that stops listening for them. Commands stop cleanly at the first
// signal; serve, whose clean stop may wait for calls in progress, cuts
// that wait at the second.
func notifySignals() (context.Context, func()) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancel(context.Background())
	force, forceNow := context.WithCancel(context.Background())
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
		}
	}()
	return context.WithValue(ctx, forceKey{}, force), func() {
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
