package kafka

import (
	"context"
	"sync"
	"time"
)

// appendSettle is how long an append in flight is still waited for once
// its connection ended (the client went away, or Server.Close): it is
// not cancelled with the connection, whose end would leave its outcome
// unknown (the engine may store it after the call returned).
var appendSettle = 30 * time.Second

// appendContext is the context of a batch's append: not cancelled when
// the connection ends, but appendSettle after, so that the append
// settles (stored, or refused) before the connection's goroutine, and
// Server.Close, which waits for it, return. Cancelled at once, the
// append's outcome was unknown, and the engine could store it after
// Close returned: a listener started then did not read it back, and a
// producer's retry stored its records twice. done releases the context.
func (c *conn) appendContext() (ctx context.Context, done func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(c.ctx))
	var (
		mu    sync.Mutex
		over  bool
		timer *time.Timer
	)
	stop := context.AfterFunc(c.ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !over {
			timer = time.AfterFunc(appendSettle, cancel)
		}
	})
	return ctx, func() {
		stop()
		mu.Lock()
		over = true
		if timer != nil {
			timer.Stop()
		}
		mu.Unlock()
		cancel()
	}
}
