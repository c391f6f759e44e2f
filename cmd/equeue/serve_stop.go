package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/equeue-go/equeue/remote"
)

// errForcedShutdown is returned by serve when a second signal cut the
// calls still in progress (exit code 1).
var errForcedShutdown = errors.New("shutdown forced by a second signal: the calls still in progress were cut; the engine was closed cleanly")

// errCloseAbandoned is returned by serve when a signal came while it
// closed its engine, and it stopped waiting for that close (exit code 1).
var errCloseAbandoned = errors.New("a signal came while the engine closed: serve stopped waiting for it, so the engine was not closed cleanly (serve, or any command that changes the directory, recovers it); what serve acknowledged was stored as --sync says")

// stopServer stops srv gracefully: the calls in progress get up to
// shutdownGrace (its GracefulStopTimeout). A second signal (see forced)
// during that wait cuts them at once and returns errForcedShutdown. Either
// way the caller then closes the engine as usual (see closeEngine), so
// every send that was acknowledged stays stored; a cut call was not
// acknowledged.
func (a *app) stopServer(ctx context.Context, srv *remote.Server) error {
	stopped := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(stopped)
	}()
	select {
	case <-stopped:
		return nil
	case <-forced(ctx).Done():
	}
	a.log.Warn("second signal received: cutting the calls in progress, then closing the engine")
	srv.Stop()
	<-stopped
	return errForcedShutdown
}

// closeEngine runs closeFn, the close of serve's engine (or cluster node),
// and returns its error. A signal that comes while it runs (see
// nextSignal) stops the wait: closeEngine then returns errCloseAbandoned
// at once and leaves closeFn running, since nothing can stop a store call
// that does not return (a hung disk); serve's process exits right after.
// The gRPC server is stopped by then, so no call waits for an answer.
func (a *app) closeEngine(ctx context.Context, closeFn func() error) error {
	next := nextSignal(ctx)
	done := make(chan error, 1)
	go func() { done <- closeFn() }()
	select {
	case err := <-done:
		return err
	case <-next:
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
