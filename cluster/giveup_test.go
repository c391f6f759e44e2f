package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A send given up while its write replicates (here: the leader's own log
// write is held, so the entry is not applied) is told "unknown", never
// "not stored": the write goes on, and once the log is released every node
// stores the message. Before, the sender got the context's error alone,
// the same as a send that stored nothing.
func TestNode_SendGivenUpWhileReplicatingIsUnknownAndStored(t *testing.T) {
	c, hn := newHeldCluster(t, false)
	ctx := context.Background()
	c.createTopic(t, "t", 1)
	c.waitConverged()
	leader := c.waitLeader()

	held := hn.log(leader.ID())
	held.setHeld(true)
	defer held.setHeld(false)
	sendCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	sent := make(chan error, 1)
	go func() {
		_, err := leader.Append(sendCtx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("given up")}}})
		sent <- err
	}()
	eventually(t, 10*time.Second, func() error {
		if _, ok := held.firstBlocked(); !ok {
			return errors.New("the leader wrote nothing yet")
		}
		return nil
	})
	cancel()
	err := <-sent
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "the engine had taken the send: its outcome is unknown")

	held.setHeld(false)
	c.waitConverged()
	// Every node's store holds the message once (read after the nodes close).
	dirs := c.dirs
	c.closeAll()
	for _, dir := range dirs {
		require.Equal(t, map[int][]string{0: {"given up"}}, readAll(t, dir, "t"), dir)
	}
}
