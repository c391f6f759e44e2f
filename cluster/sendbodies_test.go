package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// sendBodies stores every body once, in order, while leadership moves
// from node to node under it: a batch refused is sent again, and one of
// unknown outcome (rarer: leadership lost while Raft committed it) is sent
// again only when a later leader's store does not hold it. The tests that
// use it failed on a loaded machine when an election cut into their sends.
func TestCluster_SendBodiesAcrossLeaderChanges(t *testing.T) {
	c := newCluster(t, 3, nil)
	require.NoError(t, c.waitLeader().CreateTopic(context.Background(), "t", 2))

	// Leadership moves four times while the test sends. The goroutine
	// must not end the test (require): it waits for a leader itself, and
	// stops when the test ends first.
	ctx, cancel := context.WithCancel(context.Background())
	nodes := slices.Clone(c.nodes)
	moved := make(chan error, 1)
	go func() {
		moved <- moveLeadership(ctx, nodes, 4)
	}()
	t.Cleanup(func() {
		cancel()
		<-moved
	})
	sent := 0
	for done := false; !done; sent += 100 {
		sendBodies(t, c, "t", sent, 100)
		select {
		case err := <-moved:
			moved <- err // for the cleanup
			require.NoError(t, err)
			done = true
		default:
		}
	}
	c.waitConverged()
	c.closeAll()

	want := map[int][]string{}
	for i := range sent {
		want[i/100%2] = append(want[i/100%2], fmt.Sprintf("message %06d %0120d", i, i))
	}
	for i := range c.dirs {
		require.Equal(t, want, readAll(t, c.dirs[i], "t"), "%s holds each body once, in order", c.id(i))
	}
}

// moveLeadership has the leader among nodes hand its leadership over
// times times, waiting for a new leader after each.
func moveLeadership(ctx context.Context, nodes []*cluster.Node, times int) error {
	for moved := 0; moved < times; {
		var l *cluster.Node
		for deadline := time.Now().Add(30 * time.Second); l == nil; time.Sleep(20 * time.Millisecond) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if time.Now().After(deadline) {
				return errors.New("no leader within 30s")
			}
			for _, n := range nodes {
				if n.Status().Serving {
					l = n
				}
			}
		}
		if l.TransferLeadership(ctx, "") == nil {
			moved++
		}
	}
	return nil
}
