package equeue

import (
	"context"
	"sync"
)

// firstApply lets a Start wait until its membership loop applied the
// join's grants (see runMembership): it holds the outcome of the first
// apply. An apply is cancelled when the member rejoins (expired
// meanwhile: the new join's assignment is applied next) or the loop ends
// (which the loop reports by itself): its error then says nothing of the
// grants. A PullConsumer's Start, which fails unless it holds its grants,
// waits for the first apply that was not cancelled (skipCancelled); a
// Consumer's, which never fails once joined, returns after the first one
// whatever its end.
type firstApply struct {
	skipCancelled bool
	once          sync.Once
	done          chan struct{} // closed once err is set
	err           error
}

// newFirstApply returns a firstApply waiting for its outcome; with
// skipCancelled, a cancelled apply is no outcome.
func newFirstApply(skipCancelled bool) *firstApply {
	return &firstApply{skipCancelled: skipCancelled, done: make(chan struct{})}
}

// wrap returns apply, reporting the outcome of its first call (not
// cancelled, with skipCancelled).
func (f *firstApply) wrap(apply func(context.Context, Assignment) error) func(context.Context, Assignment) error {
	return func(ctx context.Context, a Assignment) error {
		err := apply(ctx, a)
		if f.skipCancelled && err != nil && ctx.Err() != nil {
			return err
		}
		f.report(err)
		return err
	}
}

// report sets the outcome to err unless one was set already: the membership
// loop reports its end this way, for a Start still waiting.
func (f *firstApply) report(err error) {
	f.once.Do(func() {
		f.err = err
		close(f.done)
	})
}

// wait returns the outcome once there is one, or ctx's error when ctx
// ends first.
func (f *firstApply) wait(ctx context.Context) error {
	select {
	case <-f.done:
		return f.err
	case <-ctx.Done():
		return ctx.Err()
	}
}
