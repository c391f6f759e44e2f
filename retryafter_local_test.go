package equeue_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// RetryAfter chooses the wait of an in-place retry too: an orderly or a
// broadcasting consumer whose LocalRetryDelay is an hour handles a message
// whose handler asked for RetryAfter(20ms) again at once.
func TestRetryAfter_ChoosesTheLocalRetryWait(t *testing.T) {
	for name, o := range map[string]equeue.ConsumerOptions{
		"orderly":      {Orderly: true},
		"broadcasting": {Model: equeue.Broadcasting, ID: "b1"},
	} {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			var runs atomic.Int32
			o.Group, o.Subscriptions, o.LocalRetryDelay = "g", []equeue.Subscription{{Topic: "t"}}, time.Hour
			o.Handler = func(context.Context, *equeue.Message) error {
				if runs.Add(1) == 1 {
					return equeue.RetryAfter(20*time.Millisecond, errors.New("not yet"))
				}
				return nil
			}
			startConsumer(t, e, o)
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
			require.NoError(t, err)
			eventually(t, 10*time.Second, func() bool { return runs.Load() == 2 }, "handled again after the handler's wait, not LocalRetryDelay")
		})
	}
}
