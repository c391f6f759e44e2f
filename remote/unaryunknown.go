package remote

import (
	"context"
	"fmt"

	"github.com/equeue-go/equeue"
)

// change runs call, a unary call that changes the engine (a send-back, a
// redrive, an admin change), on ctx and returns its error as c.fail maps
// it. When the request left the client and the call ended without the
// broker's answer (its context ended, its connection broke), the error
// also matches equeue.ErrIndeterminate: the broker may have made the
// change, as Append reports (appendUnary). A call that never left the
// client gives its cause alone: nothing was changed.
func (c *Client) change(ctx context.Context, call func(ctx context.Context) error) error {
	m := new(sentMarker)
	err := call(context.WithValue(ctx, sentKey{}, m))
	if err == nil {
		return nil
	}
	ferr := c.fail(err)
	if m.sent.Load() && !brokerAnswer(err) {
		return fmt.Errorf("%w: remote: call sent and not answered: %w", equeue.ErrIndeterminate, ferr)
	}
	if !m.sent.Load() {
		return unsentUnavailable(ferr)
	}
	return ferr
}
