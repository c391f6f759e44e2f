package watermill_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	eqwm "github.com/equeue-go/equeue/watermill"
)

// TestSubscriber_CleanStopMidStreamNoDuplicates: a Subscriber closed while
// its messages are being Ack'd, then a new one of the same group (and
// member ID), receives each message Ack'd exactly once across both:
// ordered and unordered, clustering and broadcasting.
func TestSubscriber_CleanStopMidStreamNoDuplicates(t *testing.T) {
	for _, c := range []struct {
		name      string
		unordered bool
		broadcast bool
	}{{"ordered", false, false}, {"unordered", true, false}, {"broadcast", false, true}, {"unorderedbroadcast", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			const n = 150
			e := openEngine(t)
			pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 2})
			uuids := publishN(t, pub, "cs", n)
			opts := patientConsumer
			if c.broadcast {
				opts.Model = equeue.Broadcasting
			}
			cfg := eqwm.SubscriberConfig{Broker: e, ConsumerGroup: "g", MemberID: "node-1", Queues: 2,
				Unordered: c.unordered, Concurrency: 4, Consumer: opts}

			var mu sync.Mutex
			acked := map[string]int{}
			count := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(acked)
			}
			// run subscribes and Acks every message it receives until its
			// channel is closed.
			run := func() (*eqwm.Subscriber, chan struct{}) {
				s, err := eqwm.NewSubscriber(cfg)
				require.NoError(t, err)
				ch, err := s.Subscribe(ctxT(t), "cs")
				require.NoError(t, err)
				done := make(chan struct{})
				go func() {
					defer close(done)
					for m := range ch {
						time.Sleep(time.Millisecond) // the work
						m.Ack()
						mu.Lock()
						acked[m.UUID]++
						mu.Unlock()
					}
				}()
				return s, done
			}
			first, done := run()
			require.Eventually(t, func() bool { return count() >= n/3 }, 30*time.Second, 5*time.Millisecond, "a third Ack'd")
			require.NoError(t, first.Close()) // while messages are handed out
			<-done
			require.Less(t, count(), n, "closed mid-stream")
			second, done := run()
			require.Eventually(t, func() bool { return count() == n }, 30*time.Second, 5*time.Millisecond, "every message Ack'd")
			require.NoError(t, second.Close())
			<-done
			mu.Lock()
			defer mu.Unlock()
			for _, u := range uuids {
				assert.Equal(t, 1, acked[u], "message %s Ack'd %d times", u, acked[u])
			}
		})
	}
}
