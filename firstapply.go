package equeue

import (
	"context"
	"errors"
	"sync"

	"github.com/equeue-go/equeue/store"
)

// firstApply lets a Start wait until its membership loop applied the
// join's grants (see runMembership): it holds the outcome of the first
// apply that counts. An apply is cancelled when the member rejoins
// (expired meanwhile: the new join's assignment is applied next) or the
// loop ends (which the loop reports by itself): its error then says
// nothing of the grants. A PullConsumer's Start, which fails unless it
// holds its grants, waits for the first apply that was not cancelled
// (untilNotCancelled). A Consumer's, which never fails once joined, waits
// for the first apply that succeeded (untilApplied): a failed one is tried
// again in the background, and a Start that returned before its queues'
// starts were stored would let a message sent once it returned be skipped
// by a group starting from the latest message, should the engine be
// reopened before a later try stored them. A failure that no later try
// can mend (permanentApplyFailure) is reported all the same.
type firstApply struct {
	until firstApplyUntil
	// inProcess is set when the broker is this process's engine (see
	// permanentApplyFailure).
	inProcess bool
	once      sync.Once
	done      chan struct{} // closed once err is set
	err       error
}

// firstApplyUntil says which apply's outcome a firstApply reports.
type firstApplyUntil int

const (
	// untilNotCancelled reports the first apply that was not cancelled.
	untilNotCancelled firstApplyUntil = iota
	// untilApplied reports the first apply that succeeded.
	untilApplied
)

// newFirstApply returns a firstApply waiting for the outcome until says.
func newFirstApply(until firstApplyUntil) *firstApply {
	return &firstApply{until: until, done: make(chan struct{})}
}

// wrap returns apply, reporting the outcome of its first call that counts
// (see firstApplyUntil).
func (f *firstApply) wrap(apply func(context.Context, Assignment) error) func(context.Context, Assignment) error {
	return func(ctx context.Context, a Assignment) error {
		err := apply(ctx, a)
		if err != nil && (ctx.Err() != nil || f.until == untilApplied && !permanentApplyFailure(err, f.inProcess)) {
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

// permanentApplyFailure reports whether an apply failed for a reason that
// lasts until the engine is reopened, so that trying it again is in vain:
// the engine (or the client the consumer uses) is closed (ErrClosed), a
// failed fsync stopped its writes (ErrStoreFailed), or its store lost its
// memtable (store.ErrUnusable). Any other failure may pass (ErrNoSpace,
// a broken connection, a member expired meanwhile) and is tried again.
//
// Only an engine of this process (inProcess) is reopened by its user
// alone, who must make new consumers on it then. A broker of its own (a
// remote one, a cluster node) is reopened under the consumer: the broker
// restarted (remote's health answers NOT_SERVING for a failed fsync so
// that it is), or another node leading. There a failed fsync or an
// unusable store is tried again, as is an ErrClosed that also matches
// ErrIndeterminate (a cluster leader's tenure cut short under the call);
// a bare ErrClosed is the client's or the node's own close, which lasts.
func permanentApplyFailure(err error, inProcess bool) bool {
	if !inProcess {
		return errors.Is(err, ErrClosed) && !errors.Is(err, ErrIndeterminate)
	}
	return errors.Is(err, ErrClosed) || errors.Is(err, ErrStoreFailed) || errors.Is(err, store.ErrUnusable)
}
