package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// errForcedShutdown is returned by serve when a second signal cut the
// calls still in progress (exit code 1).
var errForcedShutdown = errors.New("shutdown forced by a second signal: the calls still in progress were cut; the engine was closed cleanly")

// errCloseAbandoned is returned by serve when a signal came after its
// server stopped, before its engine's close finished, and it stopped
// waiting for that close (exit code 1).
var errCloseAbandoned = errors.New("a signal came before the engine's close finished: serve stopped waiting for it, so the engine was not closed cleanly (serve, or any command that changes the directory, recovers it); what serve acknowledged was stored as --sync says")

// stopServer stops srv gracefully: the calls in progress get up to
// shutdownGrace (its GracefulStopTimeout). A second signal (see forced)
// during that wait cuts them at once and returns errForcedShutdown. Either
// way the caller then closes the engine as usual (see closeEngine), so
// every send that was acknowledged stays stored; a cut call was not
// acknowledged. The context returned (see nextSignal) is ended by the
// first signal after the stop: the caller hands it to closeEngine, so
// that a signal that comes before the engine's close begins (while the
// add-ons stop) is not lost.
func (a *app) stopServer(ctx context.Context, srv *remote.Server) (context.Context, error) {
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
		return nextSignal(ctx), nil
	case <-forced(ctx).Done():
	}
	// The feed is past the signal that ended forced(ctx) (notifySignals):
	// only one after it ends next.
	next := nextSignal(ctx)
	a.log.Warn("second signal received: cutting the calls in progress, then closing the engine")
	srv.Stop()
	<-stopped
	return next, errForcedShutdown
}

// earlySignalCloseGrace bounds the wait for the engine's close when the
// signal that gives it up came before it began (see closeEngine).
const earlySignalCloseGrace = 5 * time.Second

// closeEngine closes serve's engine (or cluster node) with closeCtx, its
// CloseContext, on abort: the context stopServer returned, or when serve
// stopped before it (abort is nil) one that the first signal after this
// call ends (see nextSignal). When abort ends before the close finished
// (a signal came, and the store does not answer: a hung disk), closeCtx
// returns an error matching equeue.ErrCloseAbandoned and leaves the close
// running, since nothing can stop a store call that does not return;
// closeEngine then returns errCloseAbandoned, and serve's process exits
// right after. The gRPC server is stopped by then, so no call waits for
// an answer. A signal that came before the close began (while the add-ons
// stopped) does not give the close up before it could start: the close
// then gets earlySignalCloseGrace to finish, or until one more signal, so
// that a disk that answers is still closed cleanly.
func (a *app) closeEngine(ctx, abort context.Context, closeCtx func(context.Context) error) error {
	if abort == nil {
		abort = nextSignal(ctx)
	}
	if abort.Err() != nil {
		var cancel context.CancelFunc
		abort, cancel = context.WithTimeout(nextSignal(ctx), earlySignalCloseGrace)
		defer cancel()
	}
	err := closeCtx(abort)
	if !errors.Is(err, equeue.ErrCloseAbandoned) {
		return err
	}
	a.log.Error("signal received while closing the engine: exiting without waiting for the close")
	return errCloseAbandoned
}

// joinCloseError adds cerr, the error of serve's engine close, to err,
// serve's own. When the close was abandoned (errCloseAbandoned), the
// errForcedShutdown in err, which says the engine was closed cleanly, is
// dropped.
func joinCloseError(err, cerr error, what string) error {
	if cerr == nil {
		return err
	}
	if errors.Is(cerr, errCloseAbandoned) {
		if errors.Is(err, errForcedShutdown) {
			err = nil
		}
		return errors.Join(err, cerr)
	}
	return errors.Join(err, fmt.Errorf("close %s: %w", what, cerr))
}
