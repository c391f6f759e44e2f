package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestPriority_RemotePullConsumerLowerLaneWaitsForAHigherLaneAppendedBefore
// is TestPriority_RemoteLowerLaneWaitsForAHigherLaneAppendedBefore for a
// PullConsumer fetching each lane from a goroutine of its own: both lanes'
// Fetches long-poll, a high and then a low message are stored, and the
// high lane's answer travels slower than the low lane's. The low lane's
// Fetch must return only once the high message was fetched.
func TestPriority_RemotePullConsumerLowerLaneWaitsForAHigherLaneAppendedBefore(t *testing.T) {
	for mode, ahead := range map[string]int{"long-poll": -1, "read-ahead": remote.DefaultPullAhead} {
		t.Run(mode, func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			s := startServer(t, e, "", nil)
			require.NoError(t, e.CreateTopicWith(ctx, "p", equeue.TopicOptions{Queues: 1, Priorities: 2}))
			b := &heldLaneClient{Client: dial(t, s.addr, &remote.ClientOptions{PullAhead: ahead}), held: 1,
				release: make(chan struct{}), probed: make(chan struct{}), polling: map[int]int{}}
			pc, err := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "p"}}})
			require.NoError(t, err)
			require.NoError(t, pc.Start(ctx))
			defer func() { assert.NoError(t, pc.Close()) }()
			low, high := equeue.QueueRef{Topic: "p", Queue: 0}, equeue.QueueRef{Topic: "p", Queue: 1}

			type fetched struct {
				msgs    []*equeue.Message
				err     error
				highPos int64 // the high lane's position when the low lane's Fetch returned
			}
			lowGot, highGot := make(chan fetched, 1), make(chan fetched, 1)
			go func() {
				msgs, err := pc.Fetch(ctx, high, 10, time.Hour)
				highGot <- fetched{msgs: msgs, err: err}
			}()
			go func() {
				msgs, err := pc.Fetch(ctx, low, 10, time.Hour)
				pos, _ := pc.Position(high)
				lowGot <- fetched{msgs: msgs, err: err, highPos: pos}
			}()
			eventually(t, 30*time.Second, func() bool { return b.idle(0, 1) }, "both lanes long-polling")

			b.armed.Store(true)
			p := newProducer(t, e)
			for _, m := range []*equeue.Message{{Topic: "p", Priority: 1, Body: []byte("high")}, {Topic: "p", Priority: 0, Body: []byte("low")}} {
				_, err := p.Send(ctx, m)
				require.NoError(t, err)
			}
			// The high lane's answer is let through once the low lane's
			// Fetch returned (wrongly), or once the consumer asked the high
			// lane, without waiting, whether it has messages.
			var lo fetched
			returned := false
			select {
			case lo = <-lowGot:
				returned = true
			case <-b.probed:
			}
			close(b.release)
			hi := <-highGot
			require.NoError(t, hi.err)
			require.Len(t, hi.msgs, 1)
			assert.Equal(t, "high", string(hi.msgs[0].Body))
			if !returned {
				lo = <-lowGot
			}
			require.NoError(t, lo.err)
			require.Len(t, lo.msgs, 1)
			assert.Equal(t, "low", string(lo.msgs[0].Body))
			assert.Equal(t, int64(1), lo.highPos, "the low lane's Fetch returned before the high message, stored first, was fetched")
		})
	}
}
