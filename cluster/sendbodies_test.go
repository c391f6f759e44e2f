package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// sendBodies stores every body once, in order, while leadership moves
// from node to node under it: a batch refused is sent again, and one of
// unknown outcome (rarer: leadership lost while Raft committed it) is sent
// again only when a later leader's store does not hold it. The tests that
// use it failed on a loaded machine when an election cut into their sends.
func TestCluster_SendBodiesAcrossLeaderChanges(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "t", 2)

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

// onLeader makes a call on the leader's engine while leadership moves
// from node to node under it: a call refused is made again on a later
// leader, one of unknown outcome again only when it did not take effect.
// The clean-stop tests, which called the leader once and took any error
// for a failure, failed so on a loaded machine when an election (or a
// lapse of the lease) cut into a call.
func TestCluster_OnLeaderAcrossLeaderChanges(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()
	c.createTopicWith(t, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour})

	moveCtx, cancel := context.WithCancel(context.Background())
	nodes := slices.Clone(c.nodes)
	moved := make(chan error, 1)
	go func() {
		moved <- moveLeadership(moveCtx, nodes, 4)
	}()
	t.Cleanup(func() {
		cancel()
		<-moved
	})
	var ids []string
	for done := false; !done; {
		id := fmt.Sprintf("id-%d", len(ids))
		c.onLeader(t, "append "+id, func(e *equeue.Engine) error {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: id, Body: []byte(id)}}})
			return err
		}, func(failed *equeue.Engine) bool { return c.queueEndsWith(t, failed, "d", 0, []byte(id)) })
		ids = append(ids, id)
		c.commitOffsets(t, "g", map[equeue.QueueRef]int64{{Topic: "d"}: int64(len(ids))})
		select {
		case err := <-moved:
			moved <- err // for the cleanup
			require.NoError(t, err)
			done = true
		default:
		}
	}

	var offsets map[equeue.QueueRef]int64
	c.onLeader(t, "read offsets", func(e *equeue.Engine) (err error) {
		offsets, err = e.GroupOffsets(ctx, "g")
		return err
	}, nil)
	require.Equal(t, map[equeue.QueueRef]int64{{Topic: "d"}: int64(len(ids))}, offsets)
	var res equeue.AppendResult
	c.onLeader(t, "append id-0 again", func(e *equeue.Engine) (err error) {
		res, err = e.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "id-0", Body: []byte("again")}}})
		return err
	}, func(failed *equeue.Engine) bool { return c.queueEndsWith(t, failed, "d", 0, []byte("again")) })
	require.True(t, res.Duplicate, "id-0 answered as a duplicate, not stored again")
	c.waitConverged()
	c.closeAll()
	for i := range c.dirs {
		require.Equal(t, map[int][]string{0: ids}, readAll(t, c.dirs[i], "d"), "%s holds each message once, in order", c.id(i))
	}
}

// createTopic and commitOffsets, which the tests call right after their
// cluster starts, do what they are asked once while leadership moves from
// node to node under them: a call refused is made again on a later
// leader, a creation of unknown outcome again only when no later leader
// holds the topic. The tests called the leader once instead, and failed
// so on a loaded machine when an election (or a lapse of the lease) cut
// into the call.
func TestCluster_SetupCallsAcrossLeaderChanges(t *testing.T) {
	c := newCluster(t, 3, nil)
	ctx := context.Background()

	moveCtx, cancel := context.WithCancel(ctx)
	nodes := slices.Clone(c.nodes)
	moved := make(chan error, 1)
	go func() {
		moved <- moveLeadership(moveCtx, nodes, 4)
	}()
	t.Cleanup(func() {
		cancel()
		<-moved
	})
	var topics []string
	offsets := map[equeue.QueueRef]int64{}
	for done := false; !done; {
		name := fmt.Sprintf("t%d", len(topics))
		c.createTopic(t, name, 2)
		topics = append(topics, name)
		offsets[equeue.QueueRef{Topic: name, Queue: 1}] = 0
		c.commitOffsets(t, "g", offsets)
		select {
		case err := <-moved:
			moved <- err // for the cleanup
			require.NoError(t, err)
			done = true
		default:
		}
	}

	var got map[equeue.QueueRef]int64
	c.onLeader(t, "read offsets", func(e *equeue.Engine) (err error) {
		got, err = e.GroupOffsets(ctx, "g")
		return err
	}, nil)
	require.Equal(t, offsets, got)
	c.waitConverged()
	c.closeAll()
	for i := range c.dirs {
		require.ElementsMatch(t, topics, topicsOf(t, c.dirs[i]), "%s holds every topic", c.id(i))
	}
}
