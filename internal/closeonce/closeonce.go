// Package closeonce runs an owner's close once, whoever asks first, and
// lets every caller bound its own wait for it: the shape of
// equeue.Engine.CloseContext and cluster.Node.CloseContext.
package closeonce

import (
	"context"
	"fmt"
	"sync/atomic"
)

// Close is one owner's close: started by the first Wait, finished once,
// its result given to every Wait that sees it finish. Make it with New.
type Close struct {
	started atomic.Bool
	done    chan struct{} // closed once the close has finished or stopped
	err     error         // its result, set before done is closed
}

// New returns a close not yet started.
func New() *Close { return &Close{done: make(chan struct{})} }

// Wait starts shutdown if no Wait has, and returns its result once it has
// finished. When ctx ends first, Wait returns an error matching abandoned
// and ctx's error, and the close goes on; a later Wait returns its result
// once finished.
//
// shutdown runs on the caller's goroutine when ctx has no Done channel
// (context.Background), and on a goroutine of its own otherwise. When it
// does not finish (a panic, which goes on in the goroutine it runs on),
// every Wait returns stopped, never a clean result.
func (c *Close) Wait(ctx context.Context, shutdown func() error, stopped, abandoned error) error {
	if c.started.CompareAndSwap(false, true) {
		if ctx.Done() == nil {
			c.run(shutdown, stopped)
			return c.err
		}
		go c.run(shutdown, stopped)
	}
	select {
	case <-c.done:
		return c.err
	case <-ctx.Done():
		select { // finished as ctx ended: the result is known
		case <-c.done:
			return c.err
		default:
		}
		return fmt.Errorf("%w: %w", abandoned, ctx.Err())
	}
}

// run runs shutdown and publishes its result, or stopped when it does
// not return.
func (c *Close) run(shutdown func() error, stopped error) {
	finished := false
	defer func() {
		if !finished {
			c.err = stopped
		}
		close(c.done)
	}()
	c.err = shutdown()
	finished = true
}
