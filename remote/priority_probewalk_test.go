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

// stalledLaneClient is a remote client whose long-polls of one queue ID (a
// lane) are answered only once release is closed, whatever they found, as
// a lane whose answers are slow to come back: that lane stays idle where
// its runner stands. It counts the pulls of that lane that do not wait.
type stalledLaneClient struct {
	*remote.Client
	stalled int
	release chan struct{}
	polling atomic.Int32 // long-polls of stalled in flight
	reads   atomic.Int64 // pulls of stalled that do not wait
}

func (c *stalledLaneClient) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if req.Queue != c.stalled {
		return c.Client.Pull(ctx, req)
	}
	if req.Wait == 0 {
		c.reads.Add(1)
		return c.Client.Pull(ctx, req)
	}
	c.polling.Add(1)
	defer c.polling.Add(-1)
	res, err := c.Client.Pull(ctx, req)
	select {
	case <-c.release:
	case <-ctx.Done():
	}
	return res, err
}

// TestPriority_RemoteProbeWalksSkippedRecordsOnce: over remote, a lower
// lane reads the idle higher lanes before it hands out a pull. When a
// higher lane holds many records past where its runner stands that the
// consumer's filter skips, and its runner has not moved on (its answer is
// slow), the first lower pull reads through them; the next lower pulls
// go on from where that read got to, not through the same records again
// (one read of a few records each, for every pull of the lower lane).
func TestPriority_RemoteProbeWalksSkippedRecordsOnce(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
	b := &stalledLaneClient{Client: dial(t, s.addr, &remote.ClientOptions{PullAhead: -1}), stalled: 1, release: make(chan struct{})}
	var mu sync.Mutex
	var handled []string
	c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p", Filter: "A"}},
		Concurrency: 1, Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			handled = append(handled, string(m.Body))
			mu.Unlock()
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer func() { assert.NoError(t, c.Close()) }()
	defer close(b.release)
	eventually(t, 30*time.Second, func() bool { return b.polling.Load() > 0 }, "the high lane long-polling")

	p := newProducer(t, e)
	const skipped = 4000
	batch := make([]*equeue.Message, skipped)
	for i := range batch {
		batch[i] = &equeue.Message{Topic: "p", Priority: 1, Tag: "B", Body: []byte("skipped")}
	}
	_, err = p.SendBatch(ctx, batch)
	require.NoError(t, err)
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(handled) }
	send := func(body string) int64 {
		before, n := b.reads.Load(), count()
		_, err := p.Send(ctx, &equeue.Message{Topic: "p", Priority: 0, Tag: "A", Body: []byte(body)})
		require.NoError(t, err)
		eventually(t, 30*time.Second, func() bool { return count() == n+1 }, "%s handled", body)
		return b.reads.Load() - before
	}
	first := send("low-1")
	require.Positive(t, first, "the first lower pull read the idle high lane")
	for _, body := range []string{"low-2", "low-3"} {
		assert.LessOrEqual(t, send(body), int64(2), "%s: the high lane's records the filter skips are not read through again", body)
	}
}
