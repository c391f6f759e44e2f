package equeue_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// offsetsOf returns member's committed offsets of grants, by topic.
func offsetsOf(t *testing.T, e *equeue.Engine, member string, grants []equeue.Grant) map[string]int64 {
	t.Helper()
	ocs, err := e.FetchOffsets(ctxT(t), "g", member, grants)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, oc := range ocs {
		out[oc.Topic] = oc.Offset
	}
	return out
}

// grantIn is the grant of topic among a's queues.
func grantIn(t *testing.T, a equeue.Assignment, topic string) equeue.Grant {
	t.Helper()
	for _, q := range a.Queues {
		if q.Topic == topic {
			return q
		}
	}
	require.Failf(t, "no grant", "of %s in %v", topic, a.Queues)
	return equeue.Grant{}
}

// The commit incarnation check crossed with a redrive: an incarnation
// dead-letters a message and goes; a new incarnation of its member ID
// joins, the dead letter is redriven into the group's retry topic and the
// new incarnation commits past it. The old incarnation's late commit, of
// the retry queue and of the topic, both behind the new one's, is refused
// (ErrNotMember): it moves neither offset back, so the redriven message
// is not handled again, and leaves the dead letter marked redriven, so a
// second redrive sends nothing.
func TestCommitIncarnation_StaleCommitAfterARedriveMovesNothing(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) { staleCommitAfterARedrive(t, kind) })
	}
}

func staleCommitAfterARedrive(t *testing.T, kind string) {
	e, _ := openEngine(t, kind, &equeue.Options{SessionTimeout: time.Hour})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
	require.NoError(t, err)
	subs := []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}
	old, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Subscriptions: subs, Incarnation: "old"})
	require.NoError(t, err)
	tg, rg := grantIn(t, old, "t"), grantIn(t, old, equeue.RetryTopic("g"))
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 3, Group: "g", Member: "a", Epoch: tg.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 3)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "a", Grant: tg, Offset: 0, DeadLetter: true})
	require.NoError(t, err)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "old",
		Offsets: []equeue.OffsetCommit{{Grant: tg, Offset: 1}}}))
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "a"})) // names no incarnation, as an old client's

	fresh, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Subscriptions: subs, Incarnation: "new"})
	require.NoError(t, err)
	ntg, nrg := grantIn(t, fresh, "t"), grantIn(t, fresh, equeue.RetryTopic("g"))
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	rres, err := e.Pull(ctx, &equeue.PullRequest{Topic: nrg.Topic, Queue: nrg.Queue, Offset: 0, Max: 10, Group: "g", Member: "a", Epoch: nrg.Epoch})
	require.NoError(t, err)
	require.Len(t, rres.Messages, 1, "the redriven message is in the retry topic")
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "new",
		Offsets: []equeue.OffsetCommit{{Grant: ntg, Offset: 3}, {Grant: nrg, Offset: rres.NextOffset}}}))
	want := map[string]int64{"t": 3, nrg.Topic: rres.NextOffset}
	require.Equal(t, want, offsetsOf(t, e, "a", fresh.Queues))

	// The old incarnation's late commits: behind the new one's, at
	// them, and of the retry queue alone.
	for _, offs := range [][]equeue.OffsetCommit{
		{{Grant: tg, Offset: 1}, {Grant: rg, Offset: 0}},
		{{Grant: rg, Offset: 0}},
		{{Grant: tg, Offset: 3}, {Grant: rg, Offset: rres.NextOffset}},
	} {
		err = e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "old", Offsets: offs})
		assert.ErrorIs(t, err, equeue.ErrNotMember, "%v", offs)
	}
	assert.Equal(t, want, offsetsOf(t, e, "a", fresh.Queues), "the new incarnation's offsets stayed")
	dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.True(t, dls[0].Redriven, "the dead letter stays marked redriven")
	n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Zero(t, n, "nothing is redriven twice")
	rres, err = e.Pull(ctx, &equeue.PullRequest{Topic: nrg.Topic, Queue: nrg.Queue, Offset: want[nrg.Topic], Max: 10, Group: "g", Member: "a", Epoch: nrg.Epoch})
	require.NoError(t, err)
	assert.Empty(t, rres.Messages, "the new incarnation gets no redriven message again")
}

// The commit incarnation check crossed with retention: a broadcasting
// member's incarnation commits and goes, a new incarnation of its ID
// commits further, and retention trims the queue past the old one's
// offset. The old incarnation's late commit, below the retained start, is
// refused as the other incarnation's (ErrNotMember), before anything else
// is looked at: the new incarnation's offset stays, and its pulls from
// there go on.
func TestCommitIncarnation_StaleCommitBelowTheRetainedStartIsRefused(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) { staleCommitBelowTheRetainedStart(t, kind) })
	}
}

func staleCommitBelowTheRetainedStart(t *testing.T, kind string) {
	e, _ := openEngine(t, kind, &equeue.Options{SessionTimeout: time.Hour, Retention: equeue.RetentionPolicy{Interval: -1}})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3", "4", "5")})
	require.NoError(t, err)
	subs := []equeue.Subscription{{Topic: "t"}}
	old, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Model: equeue.Broadcasting, Subscriptions: subs, Incarnation: "old"})
	require.NoError(t, err)
	require.Len(t, old.Queues, 1)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "old",
		Offsets: []equeue.OffsetCommit{{Grant: old.Queues[0], Offset: 1}}}))
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "a"}))
	fresh, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Model: equeue.Broadcasting, Subscriptions: subs, Incarnation: "new"})
	require.NoError(t, err)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "new",
		Offsets: []equeue.OffsetCommit{{Grant: fresh.Queues[0], Offset: 4}}}))

	_, err = equeue.ApplyRetentionAt(ctx, e, equeue.RetentionPolicy{MaxAge: time.Hour}, time.Now().Add(2*time.Hour))
	require.NoError(t, err)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	start := info.Queues[0].MinOffset
	require.Greater(t, start, int64(1), "retention trimmed past the old incarnation's offset")

	for _, off := range []int64{0, 1, start - 1, start} {
		err = e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "old",
			Offsets: []equeue.OffsetCommit{{Grant: old.Queues[0], Offset: off}}})
		assert.ErrorIs(t, err, equeue.ErrNotMember, "offset %d", off)
	}
	assert.Equal(t, map[string]int64{"t": 4}, offsetsOf(t, e, "a", fresh.Queues), "the new incarnation's offset stayed")
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("6")})
	require.NoError(t, err)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: max(4, start), Max: 10, Group: "g", Member: "a", Epoch: fresh.Queues[0].Epoch})
	require.NoError(t, err)
	require.NotEmpty(t, res.Messages)
	assert.Equal(t, "6", string(res.Messages[len(res.Messages)-1].Body))
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "new",
		Offsets: []equeue.OffsetCommit{{Grant: fresh.Queues[0], Offset: res.NextOffset}}}), "the new incarnation commits on")
}

// A replaced incarnation's late commit that would move an offset back (a
// broadcasting member's: its grants stay valid across incarnations) is
// refused (ErrNotMember) at once, even while a send-back of the group is
// on its way: it does not first fence the group's send-backs, which
// would hold up the live incarnation's for a commit that stores nothing.
// Before, it waited for the send-back to finish, and with the send-back
// held it ended with its context's error instead of ErrNotMember.
func TestCommitIncarnation_StaleCommitMovingBackWaitsForNoSendBack(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) { staleCommitMovingBackDuringASendBack(t, kind) })
	}
}

func staleCommitMovingBackDuringASendBack(t *testing.T, kind string) {
	e, _ := openEngine(t, kind, &equeue.Options{SessionTimeout: time.Hour})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("1", "2", "3")})
	require.NoError(t, err)
	subs := []equeue.Subscription{{Topic: "t"}}
	old, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Model: equeue.Broadcasting, Subscriptions: subs, Incarnation: "old"})
	require.NoError(t, err)
	tg := grantIn(t, old, "t")
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "a"}))
	fresh, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "a", Model: equeue.Broadcasting, Subscriptions: subs, Incarnation: "new"})
	require.NoError(t, err)
	ntg := grantIn(t, fresh, "t")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 3, Group: "g", Member: "a", Epoch: ntg.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 3)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "new",
		Offsets: []equeue.OffsetCommit{{Grant: ntg, Offset: 2}}}))

	// While the new incarnation's send-back holds the group's gates, the
	// old one commits offset 1: back from 2. The bound is generous: the
	// refusal needs no wait at all.
	var stale error
	ran := false
	equeue.OnSendBackHeld(e, func(string) {
		ran = true
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		stale = e.CommitOffsets(cctx, &equeue.CommitRequest{Group: "g", Member: "a", Incarnation: "old",
			Offsets: []equeue.OffsetCommit{{Grant: tg, Offset: 1}}})
	})
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "a", Grant: ntg, Offset: 2, DeadLetter: true})
	equeue.OnSendBackHeld(e, nil)
	require.NoError(t, err)
	require.True(t, ran, "the old incarnation committed during the send-back")
	assert.ErrorIs(t, stale, equeue.ErrNotMember)
	assert.NotErrorIs(t, stale, context.DeadlineExceeded)
	assert.Equal(t, int64(2), offsetsOf(t, e, "a", fresh.Queues)["t"], "the new incarnation's offset stayed")
}
