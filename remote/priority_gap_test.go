package remote_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// heldLaneClient is a remote client whose long-polls of one queue ID (a
// lane) that found messages are answered only once release is closed,
// as a slow network would answer them. It counts the long-polls in flight
// of each queue ID, and once armed notes the first pull of the held lane
// that does not wait.
type heldLaneClient struct {
	*remote.Client
	held    int           // the queue ID whose long-poll answers are held
	release chan struct{} // closed to let the held answers through
	armed   atomic.Bool
	probed  chan struct{} // closed at the first pull of held without a wait once armed
	once    sync.Once

	mu      sync.Mutex
	polling map[int]int // long-polls in flight by queue ID
}

func (c *heldLaneClient) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if req.Wait > 0 {
		c.mu.Lock()
		c.polling[req.Queue]++
		c.mu.Unlock()
		defer func() {
			c.mu.Lock()
			c.polling[req.Queue]--
			c.mu.Unlock()
		}()
	} else if req.Queue == c.held && c.armed.Load() {
		c.once.Do(func() { close(c.probed) })
	}
	res, err := c.Client.Pull(ctx, req)
	if req.Queue == c.held && req.Wait > 0 && len(res.Messages) > 0 {
		select {
		case <-c.release:
		case <-ctx.Done():
		}
	}
	return res, err
}

// idle reports whether every queue ID of ids has a long-poll in flight.
func (c *heldLaneClient) idle(ids ...int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		if c.polling[id] == 0 {
			return false
		}
	}
	return true
}

// TestPriority_RemoteLowerLaneWaitsForAHigherLaneAppendedBefore: a remote
// consumer whose lanes are idle (each long-polling) gets a high-priority
// message and then a low-priority one of the same queue. The answer of
// the high lane's long-poll travels slower than the low lane's: the low
// message must still not be handed out before the high one, which was
// stored before it, as in process.
func TestPriority_RemoteLowerLaneWaitsForAHigherLaneAppendedBefore(t *testing.T) {
	for mode, ahead := range map[string]int{"long-poll": -1, "read-ahead": remote.DefaultPullAhead} {
		t.Run(mode, func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			s := startServer(t, e, "", nil)
			require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
			b := &heldLaneClient{Client: dial(t, s.addr, &remote.ClientOptions{PullAhead: ahead}), held: 1,
				release: make(chan struct{}), probed: make(chan struct{}), polling: map[int]int{}}
			var mu sync.Mutex
			var handled []string
			lowHandled := make(chan struct{})
			var lowOnce sync.Once
			c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}},
				Concurrency: 1, HeartbeatInterval: 200 * time.Millisecond,
				Handler: func(_ context.Context, m *equeue.Message) error {
					mu.Lock()
					handled = append(handled, string(m.Body))
					mu.Unlock()
					if m.Priority == 0 {
						lowOnce.Do(func() { close(lowHandled) })
					}
					return nil
				}})
			require.NoError(t, err)
			require.NoError(t, c.Start(ctx))
			defer func() { assert.NoError(t, c.Close()) }()
			eventually(t, 30*time.Second, func() bool { return b.idle(0, 1) }, "both lanes long-polling")

			b.armed.Store(true)
			p := newProducer(t, e)
			for _, m := range []*equeue.Message{{Topic: "p", Priority: 1, Body: []byte("high")}, {Topic: "p", Priority: 0, Body: []byte("low")}} {
				_, err := p.Send(ctx, m)
				require.NoError(t, err)
			}
			// The high lane's answer is let through once the low message
			// was handed out (wrongly), or once the consumer asked the
			// high lane, without waiting, whether it has messages.
			go func() {
				select {
				case <-lowHandled:
				case <-b.probed:
				case <-ctx.Done():
				}
				close(b.release)
			}()
			eventually(t, 30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(handled) == 2 }, "both messages handled")
			mu.Lock()
			defer mu.Unlock()
			assert.Equal(t, []string{"high", "low"}, handled, "the high message, stored first, is handed out first")
		})
	}
}
