package equeue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// engineSizes are the sizes of what the engine keeps in memory per topic,
// group, member and queue.
type engineSizes struct {
	topics, topicIDs, groups, subscribed, held, marks int
	liveOffsets, liveAttempts, liveSentBack, liveLeft int
	liveOwners, liveTargets, liveQueues               int
}

func sizesOf(e *Engine) engineSizes {
	var s engineSizes
	e.mu.RLock()
	s.topics, s.topicIDs = len(e.topics), len(e.topicIDs)
	e.mu.RUnlock()
	c := e.groups
	c.mu.Lock()
	s.groups, s.held = len(c.groups), len(c.held)
	live := c.groups["live"]
	c.mu.Unlock()
	c.subscribers.mu.Lock()
	s.subscribed = len(c.subscribers.byTopic)
	c.subscribers.mu.Unlock()
	// The marks of members that are gone go at the next sweep.
	e.marks.sweep(c.liveMember)
	s.marks = e.marks.size()
	if live != nil {
		live.mu.Lock()
		s.liveOffsets, s.liveAttempts, s.liveLeft = len(live.offsets), len(live.attempts), len(live.left)
		s.liveOwners, s.liveTargets, s.liveQueues = len(live.owners), len(live.target), len(live.queues)
		live.mu.Unlock()
		live.sbMu.Lock()
		s.liveSentBack = len(live.sentBack)
		live.sbMu.Unlock()
	}
	return s
}

// TestEngine_TopicAndGroupChurnLeavesNothingBehind: a long-lived group
// whose member consumes topics made and deleted on the way (per job), and
// groups made, used and deleted, leave the engine's memory as it was once
// they are gone (the pull marks of members that are gone, at the next
// sweep).
func TestEngine_TopicAndGroupChurnLeavesNothingBehind(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopic(ctx, "keep", 1))

	round := func(i int) {
		job := fmt.Sprintf("job-%d", i)
		require.NoError(t, e.CreateTopic(ctx, job, 2))
		for q := range 2 {
			_, err := e.Append(ctx, &AppendRequest{Topic: job, Queue: q, Messages: []*Message{{Body: []byte("a")}, {Body: []byte("b")}}})
			require.NoError(t, err)
		}
		_, err := e.Append(ctx, &AppendRequest{Topic: "keep", Messages: []*Message{{Body: []byte("k")}}})
		require.NoError(t, err)
		// The long-lived member follows the jobs; another group comes and goes.
		for _, gm := range [][2]string{{"live", "m"}, {fmt.Sprintf("g-%d", i), "x"}} {
			a, err := e.JoinGroup(ctx, &JoinRequest{Group: gm[0], Member: gm[1], Incarnation: "i",
				Subscriptions: []Subscription{{Topic: "keep"}, {Topic: job}}})
			require.NoError(t, err)
			var commits []OffsetCommit
			for _, g := range a.Queues {
				res, err := e.Pull(ctx, &PullRequest{Topic: g.Topic, Queue: g.Queue, Group: gm[0], Member: gm[1], Epoch: g.Epoch})
				require.NoError(t, err)
				if len(res.Messages) == 0 {
					continue
				}
				m := res.Messages[0]
				if g.Topic == job {
					_, err := e.SendBack(ctx, &SendBackRequest{Group: gm[0], Member: gm[1], Grant: g, Offset: m.Offset, Attempts: 1, Cause: "x"})
					require.NoError(t, err)
				}
				commits = append(commits, OffsetCommit{Grant: g, Offset: m.Offset + 1,
					Attempts: []MessageAttempts{{Offset: m.Offset + 1, Attempts: 1}}})
			}
			require.NoError(t, e.CommitOffsets(ctx, &CommitRequest{Group: gm[0], Member: gm[1], Offsets: commits}))
		}
		g := fmt.Sprintf("g-%d", i)
		require.NoError(t, e.LeaveGroup(ctx, &LeaveRequest{Group: g, Member: "x", Incarnation: "i"}))
		require.NoError(t, e.DeleteGroup(ctx, g, DeleteGroupOptions{}))
		require.NoError(t, e.DeleteTopic(ctx, job))
	}
	round(0)
	before := sizesOf(e)
	for i := 1; i <= 20; i++ {
		round(i)
	}
	require.Equal(t, before, sizesOf(e))
}
