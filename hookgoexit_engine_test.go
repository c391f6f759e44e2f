package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProducer_SendAsyncHookGoexitLeavesTheEngineWriting: a SendAsync's
// AfterSend and trace end ran where the send completed, on the engine's
// own goroutine (the one completing its writes, or the one answering the
// sends of a topic over its drop-oldest limit) or on a remote client's
// stream reader. A hook that called runtime.Goexit (t.FailNow) ended that
// goroutine: the engine completed no more writes, and later sends waited
// until their contexts ended. Now the hooks of a producer that has any run
// on a goroutine of the producer's: the Goexit is still reported by the
// future and counted, and later sends, on the same producer or another,
// complete.
func TestProducer_SendAsyncHookGoexitLeavesTheEngineWriting(t *testing.T) {
	for _, transport := range []string{"inproc", "remote"} {
		for _, topic := range []string{"plain", "limited"} {
			for _, where := range []string{"AfterSend", "end"} {
				t.Run(transport+"/"+topic+"/"+where, func(t *testing.T) {
					ctx := ctxT(t)
					e, b := openOver(t, transport, "memory", nil)
					o := equeue.TopicOptions{Queues: 1}
					if topic == "limited" { // answered once trimmed, on another goroutine of the engine's
						o.Limits = equeue.TopicLimits{MaxMessages: 1}
					}
					require.NoError(t, e.CreateTopicWith(ctx, "t", o))
					plain := newProducer(t, b, nil)
					_, err := plain.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("first")})
					require.NoError(t, err)

					exit := goexitOnce(where)
					p := newProducer(t, b, &equeue.ProducerOptions{Hooks: []equeue.Hooks{{
						AfterSend: func(context.Context, *equeue.Message, equeue.SendResult, error) { exit("AfterSend") },
						Trace: &equeue.TraceHooks{StartSend: func(ctx context.Context, _ []*equeue.Message) (context.Context, func([]equeue.SendResult, error)) {
							return ctx, func([]equeue.SendResult, error) { exit("end") }
						}},
					}}})
					wctx, cancel := context.WithTimeout(ctx, waitLong)
					defer cancel()
					res, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(wctx)
					require.NotErrorIs(t, err, context.DeadlineExceeded, "the future never completed")
					require.ErrorIs(t, err, equeue.ErrHookPanic)
					assert.NotEmpty(t, res.ID, "the result says the message was stored")
					if transport == "inproc" {
						assert.Equal(t, uint64(1), e.Stats().ConsumerHookPanics, "the Goexit was counted")
					}

					next, err := plain.Send(wctx, &equeue.Message{Topic: "t", Body: []byte("y")})
					require.NoError(t, err, "a later Send completes")
					assert.Equal(t, int64(2), next.Offset)
					next, err = plain.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("z")}).Result(wctx)
					require.NoError(t, err, "a later SendAsync completes")
					assert.Equal(t, int64(3), next.Offset)
					next, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("w")}).Result(wctx)
					require.NoError(t, err, "a later SendAsync of the producer whose hook exited completes")
					assert.Equal(t, int64(4), next.Offset)
					require.NoError(t, p.Close())
				})
			}
		}
	}
}
