package equeue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// A handler that fails after Close cancelled it starts a send-back; if the
// store is slow, that send-back is still in flight when the drain's second
// wait ends. The drain must wait for it (it is bounded), so that the final
// commit passes the message: committing without it while the retry copy is
// stored would deliver the message twice (once from its queue, once from
// the retry topic). For every mode that sends back.
func TestClose_WaitsForASendBackInFlight(t *testing.T) {
	for _, orderly := range []bool{false, true} {
		name := "concurrent"
		if orderly {
			name = "orderly"
		}
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			rig := newFaultRig(t, "memory", nil)
			e := rig.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			running := make(chan struct{})
			o := equeue.ConsumerOptions{Group: "g", ID: "a", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Orderly: orderly, ShutdownTimeout: 30 * time.Millisecond, CommitInterval: time.Hour,
				Handler: func(ctx context.Context, m *equeue.Message) error {
					close(running)
					<-ctx.Done() // cancelled at the drain's first deadline
					return errors.New("interrupted")
				}}
			if orderly {
				// An orderly member dead-letters in place: make the first
				// failure final so it stores one.
				o.MaxAttempts = 1
			}
			c := startConsumer(t, e, o)
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("job")}}})
			require.NoError(t, err)
			select {
			case <-running:
			case <-ctx.Done():
				t.Fatal("the handler did not start")
			}
			// From now on every store write takes 300 ms: longer than both
			// of the drain's 30 ms waits.
			rig.FS.OnWrite(func(*store.Batch) error { time.Sleep(300 * time.Millisecond); return nil })
			require.NoError(t, c.Close())
			rig.FS.OnWrite(nil)

			copies := int64(0)
			for _, topic := range []string{equeue.RetryTopic("g"), equeue.DLQTopic("g")} {
				if ti, err := e.Topic(ctx, topic); err == nil {
					for _, q := range ti.Queues {
						copies += q.MaxOffset - q.MinOffset
					}
				}
			}
			// A retry waits in the delay index for its backoff.
			delayed, err := e.Delayed(ctx, 10)
			require.NoError(t, err)
			copies += int64(delayed.Pending)
			committed := startedCommit(t, e, "g")
			require.Equal(t, int64(1), copies, "the failure was stored (as a retry or dead letter) before Close returned")
			assert.Equal(t, int64(1), committed, "the final commit passes the message whose copy was stored (else it is delivered twice)")
		})
	}
}
