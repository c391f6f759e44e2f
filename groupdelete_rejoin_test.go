package equeue_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// heldHeartbeats is a Broker whose heartbeats, while held, wait before
// they reach the engine.
type heldHeartbeats struct {
	equeue.Broker
	hold    atomic.Bool
	waiting atomic.Int32
	release chan struct{}
}

func (b *heldHeartbeats) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	if b.hold.Load() {
		b.waiting.Add(1)
		select {
		case <-b.release:
		case <-ctx.Done():
			return equeue.Assignment{}, ctx.Err()
		}
	}
	return b.Broker.Heartbeat(ctx, req)
}

// A member of a group deleted with Force joins again, as DeleteGroup
// says, also when its next heartbeat reaches the engine only after the
// delete (and is answered that the group does not exist), and handles
// what is sent afterwards.
func TestDeleteGroup_ForcedMemberWhoseHeartbeatComesLaterJoinsAgain(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &heldHeartbeats{Broker: e, release: make(chan struct{})}
	got := newCollector()
	startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: got.handler("c"), HeartbeatInterval: 100 * time.Millisecond})
	eventually(t, 10*time.Second, func() bool {
		gi, err := e.Group(ctx, "g")
		return err == nil && len(gi.Members) == 1
	}, "member joined")
	b.hold.Store(true)
	eventually(t, 10*time.Second, func() bool { return b.waiting.Load() > 0 }, "a heartbeat held before the engine")

	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))
	b.hold.Store(false)
	close(b.release)

	eventually(t, 10*time.Second, func() bool {
		gi, err := e.Group(ctx, "g")
		return err == nil && len(gi.Members) == 1
	}, "the member joined the group again")
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool { return got.count() == 1 }, "the message sent after the delete is handled")
}
