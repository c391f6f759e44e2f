package main

import (
	"context"
	"errors"

	"github.com/equeue-go/equeue/remote"
)

// errForcedShutdown is returned by serve when a second signal cut the
// calls still in progress (exit code 1).
var errForcedShutdown = errors.New("shutdown forced by a second signal: the calls still in progress were cut; the engine was closed cleanly")

// stopServer stops srv gracefully: the calls in progress get up to
// shutdownGrace (its GracefulStopTimeout). A second signal (see forced)
// during that wait cuts them at once and returns errForcedShutdown. Either
// way the caller then closes the engine as usual, so every send that was
// acknowledged stays stored; a cut call was not acknowledged.
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
