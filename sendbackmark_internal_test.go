package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A SendBack that passed its grant check before a reset fenced the grants,
// and reaches the group's send-back gate only after the reset, is refused
// and leaves no mark: its message is delivered again after the reset and
// a failure then is stored again.
func TestSendBack_RechecksItsGrantUnderTheGate(t *testing.T) {
	ctx := t.Context()
	e, g, grant := markedEngine(t)

	require.NoError(t, g.sbGate.lock(ctx, false, nil)) // as a reset holds it while it moves the offsets
	sent := make(chan error, 1)
	go func() {
		_, err := e.SendBack(ctx, &SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: 0, DeadLetter: true})
		sent <- err
	}()
	waitFor(t, func() bool {
		g.sbGate.mu.Lock()
		defer g.sbGate.mu.Unlock()
		return len(g.sbGate.queue) == 1
	}, "the send-back passed its first check and waits at the gate")
	g.mu.Lock()
	clear(g.owners) // the reset fences every grant
	g.mu.Unlock()
	g.sbGate.unlock(false)
	require.ErrorIs(t, <-sent, ErrFenced)
	g.sbMu.Lock()
	assert.Empty(t, g.sentBack)
	g.sbMu.Unlock()
}

// A mark answers only while the topic holding its copy is the one it was
// written to: an operator's DeleteTopic of the group's %DLQ% topic drops
// the copy and leaves the mark, which must not answer for the message when
// it fails again. (A group deleted while one of its members sends back
// was the other way to it; a join now waits for a deletion to finish, see
// groupdelete_hold.go.)
func TestSendBack_MarkOutlivingItsCopyDoesNotAnswer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	a, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: "m", From: ConsumeFromEarliest, Subscriptions: []Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	_, err = e.Pull(ctx, &PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: a.Queues[0].Epoch})
	require.NoError(t, err)
	req := &SendBackRequest{Group: "g", Member: "m", Grant: a.Queues[0], DeadLetter: true}
	first, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	require.False(t, first.Duplicate)
	repeat, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	require.True(t, repeat.Duplicate, "while its copy is stored, the mark answers")

	require.NoError(t, e.DeleteTopic(ctx, DLQTopic("g"))) // the copy goes

	again, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	assert.False(t, again.Duplicate, "no copy is left: stored again")
	dlq, ok := e.lookupTopic(DLQTopic("g"))
	require.True(t, ok)
	_, next, _ := dlq.queueList()[0].bounds()
	assert.Equal(t, int64(1), next)
}

// markedEngine opens an in-memory engine with one message in t/0 pulled
// by member m of group g.
func markedEngine(t *testing.T) (*Engine, *group, Grant) {
	ctx := t.Context()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	a, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: "m", From: ConsumeFromEarliest, Subscriptions: []Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	_, err = e.Pull(ctx, &PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: a.Queues[0].Epoch})
	require.NoError(t, err)
	g, err := e.groups.group("g")
	require.NoError(t, err)
	return e, g, a.Queues[0]
}

// A commit's deletions of passed marks that did not fit its write run
// after it, without the group's commit lock: when a reset and a new
// send-back of the same offset come in between, they leave the new, live
// mark alone, and a repeat of that send-back is answered as a duplicate.
func TestSendBack_LateMarkDeletionsSpareANewerMark(t *testing.T) {
	ctx := t.Context()
	e, g, grant := markedEngine(t)
	req := &SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: 0, DeadLetter: true}
	_, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	// A commit to 1 passes mark 0 and, its write full, leaves it for later.
	stale := []offsetSet{{k: offsetKey{q: grant.QueueRef}, off: 1, later: []int64{0}}}

	// Meanwhile: a reset (deletes mark 0 itself), a new pull, a new failure.
	require.NoError(t, e.LeaveGroup(ctx, &LeaveRequest{Group: "g", Member: "m"}))
	require.NoError(t, e.ResetOffsets(ctx, "g", ResetRequest{To: ResetToEarliest}))
	a, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: "m", Subscriptions: []Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	_, err = e.Pull(ctx, &PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: a.Queues[0].Epoch})
	require.NoError(t, err)
	req.Grant = a.Queues[0]
	r, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	require.False(t, r.Duplicate)

	e.deleteMarksAfter(g, stale) // the commit's late deletion now runs

	r, err = e.SendBack(ctx, req) // a retry of the new send-back
	require.NoError(t, err)
	assert.True(t, r.Duplicate, "the new mark should still answer")
	dlq, _ := e.lookupTopic(DLQTopic("g"))
	_, next, _ := dlq.queueList()[0].bounds()
	assert.Equal(t, int64(2), next, "one copy per handling")
}
