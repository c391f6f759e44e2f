package equeue_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// SendAsync keeps a drop-oldest topic within the bound Send keeps: the
// limit plus the messages of the sends in flight. The engine answers an
// asynchronous append that took the topic past its limit only once the
// topic is trimmed back (over "remote" the broker's append stream serves
// every send through Engine.AppendAsync).
func TestTopicLimits_DropOldestUnderConcurrentAsyncProducers(t *testing.T) {
	for _, transport := range []string{"inproc", "remote"} {
		t.Run(transport, func(t *testing.T) {
			ctx := ctxT(t)
			e, b := openOver(t, transport, "memory", nil)
			a := b.(limitsAdmin)
			const limit, producers, window, each = 50, 4, 8, 200
			require.NoError(t, a.CreateTopicWith(ctx, "ring", equeue.TopicOptions{Queues: 3,
				Limits: equeue.TopicLimits{MaxMessages: limit}}))
			var peak atomic.Int64
			stop := make(chan struct{})
			sampled := make(chan struct{})
			go func() {
				defer close(sampled)
				for {
					select {
					case <-stop:
						return
					default:
					}
					info, err := e.Topic(ctx, "ring")
					if err != nil {
						return
					}
					if n := info.Messages; n > peak.Load() {
						peak.Store(n)
					}
				}
			}()
			var wg sync.WaitGroup
			for p := 0; p < producers; p++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					prod, err := equeue.NewProducer(b, nil)
					if !assert.NoError(t, err) {
						return
					}
					defer prod.Close()
					// At most window sends of this producer in flight: a new one
					// starts once the oldest answered.
					var flight []*equeue.SendFuture
					for i := 0; i < each; i++ {
						if len(flight) == window {
							_, err := flight[0].Result(ctx)
							assert.NoError(t, err, "drop-oldest never refuses a send")
							flight = flight[1:]
						}
						flight = append(flight, prod.SendAsync(ctx, &equeue.Message{Topic: "ring", Body: []byte(fmt.Sprintf("%d-%d", p, i))}))
					}
					for _, f := range flight {
						_, err := f.Result(ctx)
						assert.NoError(t, err, "drop-oldest never refuses a send")
					}
				}()
			}
			wg.Wait()
			close(stop)
			<-sampled
			t.Logf("peak %d, limit %d, %d producers with %d sends in flight each", peak.Load(), limit, producers, window)
			assert.LessOrEqual(t, peak.Load(), int64(limit+producers*window), "the topic never exceeds the limit by more than the sends in flight")
			assert.Equal(t, int64(limit), stored(t, a, "ring"), "back at the limit once the sends answered")
			info, err := a.Topic(ctx, "ring")
			require.NoError(t, err)
			var total int64
			for _, q := range info.Queues {
				total += q.MaxOffset
			}
			assert.Equal(t, int64(producers*each), total, "every send was stored")
		})
	}
}

// The answers of asynchronous appends to one queue come in the order the
// appends were stored, also while some of them wait for a trim: those
// below the limit are answered at once, those past it after the trim, and
// none overtakes another.
func TestTopicLimits_AsyncAnswersKeepTheirOrder(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	const limit, sends = 20, 500
	require.NoError(t, e.CreateTopicWith(ctx, "ring", equeue.TopicOptions{Queues: 1,
		Limits: equeue.TopicLimits{MaxMessages: limit}}))
	require.NoError(t, e.CreateTopic(ctx, "free", 1)) // no limit: answered at once
	var (
		mu      sync.Mutex
		answers = map[string][]int64{}
		wg      sync.WaitGroup
	)
	for i := 0; i < sends; i++ {
		for _, topic := range []string{"ring", "free"} {
			wg.Add(1)
			e.AppendAsync(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: []byte(fmt.Sprint(i))}}},
				func(res equeue.AppendResult, err error) {
					defer wg.Done()
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					answers[topic] = append(answers[topic], res.FirstOffset)
					mu.Unlock()
				})
		}
	}
	wg.Wait()
	for _, topic := range []string{"ring", "free"} {
		got := answers[topic]
		require.Len(t, got, sends, topic)
		for i, off := range got {
			require.Equal(t, int64(i), off, "%s: answer %d is of offset %d", topic, i, off)
		}
	}
	assert.Equal(t, int64(limit), stored(t, e, "ring"))
	assert.Equal(t, int64(sends), stored(t, e, "free"))
}
