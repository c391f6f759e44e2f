package equeue_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// badInputTarget is what the sweep below calls: an Engine or a Namespace.
type badInputTarget interface {
	AddQueues(ctx context.Context, name string, n int) error
	Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error)
	ClaimGroup(ctx context.Context, group string, d time.Duration) error
	CommitGroupOffsets(ctx context.Context, group string, offsets map[equeue.QueueRef]int64) error
	CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error
	CreateTopic(ctx context.Context, name string, queues int) error
	CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error
	DeadLetters(ctx context.Context, group string, from int64, max int) ([]equeue.DLQEntry, error)
	Delayed(ctx context.Context, max int) (equeue.DelayedInfo, error)
	DeleteGroup(ctx context.Context, name string, o equeue.DeleteGroupOptions) error
	DeleteTopic(ctx context.Context, name string) error
	FetchOffsets(ctx context.Context, group, member string, queues []equeue.Grant) ([]equeue.OffsetCommit, error)
	Group(ctx context.Context, name string) (equeue.GroupInfo, error)
	GroupOffsets(ctx context.Context, group string) (map[equeue.QueueRef]int64, error)
	Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error)
	JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error)
	KeepGroup(ctx context.Context, group string) error
	LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error
	ListDeadLetters(ctx context.Context, group string, req equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error)
	Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error)
	Redrive(ctx context.Context, group string, req equeue.RedriveRequest) (int, error)
	ReleaseQueues(ctx context.Context, group, member string, queues []equeue.Grant) error
	ResetOffsets(ctx context.Context, group string, req equeue.ResetRequest) error
	Route(ctx context.Context, topic string) (equeue.Route, error)
	SendBack(ctx context.Context, req *equeue.SendBackRequest) (equeue.SendBackResult, error)
	SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error
	SetTopicLimits(ctx context.Context, name string, l equeue.TopicLimits) error
	Topic(ctx context.Context, name string) (equeue.TopicInfo, error)
	WaitAny(ctx context.Context, pulls []*equeue.PullRequest, wait time.Duration) error
}

type badInputCase struct {
	name string
	call func(ctx context.Context, b badInputTarget) error
	want error
}

// badInputCases are bad arguments that name topic "t" and group "g" where
// they name one: the error must not depend on whether those exist.
func badInputCases() []badInputCase {
	ref0 := equeue.QueueRef{Topic: "t"}
	grant0 := equeue.Grant{QueueRef: ref0}
	one := []*equeue.Message{{Body: []byte("x")}}
	badSync := equeue.SyncInterval(-time.Second)
	var cs []badInputCase
	add := func(name string, want error, call func(ctx context.Context, b badInputTarget) error) {
		cs = append(cs, badInputCase{name, call, want})
	}
	for _, bad := range []string{"", "a b", "%DLQ%g"} {
		add("GroupOffsets of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error { _, err := b.GroupOffsets(ctx, bad); return err })
		add("KeepGroup of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error { return b.KeepGroup(ctx, bad) })
		add("ClaimGroup of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error { return b.ClaimGroup(ctx, bad, time.Second) })
		add("DeleteGroup of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			return b.DeleteGroup(ctx, bad, equeue.DeleteGroupOptions{})
		})
		add("DeadLetters of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error { _, err := b.DeadLetters(ctx, bad, 0, 1); return err })
		add("ListDeadLetters of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			_, err := b.ListDeadLetters(ctx, bad, equeue.ListDeadLettersRequest{Max: 1})
			return err
		})
		add("Redrive of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			_, err := b.Redrive(ctx, bad, equeue.RedriveRequest{All: true})
			return err
		})
		add("CommitGroupOffsets of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			return b.CommitGroupOffsets(ctx, bad, map[equeue.QueueRef]int64{ref0: 0})
		})
		add("JoinGroup of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			_, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: bad, Member: "m2", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			return err
		})
		add("SendBack of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			_, err := b.SendBack(ctx, &equeue.SendBackRequest{Group: bad, Member: "m", Grant: grant0})
			return err
		})
		add("Group of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error { _, err := b.Group(ctx, bad); return err })
		add("ResetOffsets of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			return b.ResetOffsets(ctx, bad, equeue.ResetRequest{To: equeue.ResetToEarliest})
		})
		add("Heartbeat of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			_, err := b.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: bad, Member: "m"})
			return err
		})
		add("LeaveGroup of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			return b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: bad, Member: "m"})
		})
		add("CommitOffsets of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			return b.CommitOffsets(ctx, &equeue.CommitRequest{Group: bad, Member: "m", Offsets: []equeue.OffsetCommit{{Grant: grant0}}})
		})
		add("FetchOffsets of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			_, err := b.FetchOffsets(ctx, bad, "m", []equeue.Grant{grant0})
			return err
		})
		add("ReleaseQueues of "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
			return b.ReleaseQueues(ctx, bad, "m", []equeue.Grant{grant0})
		})
		if bad != "" { // a pull of no group is a plain pull
			add("Pull of group "+bad, equeue.ErrInvalidName, func(ctx context.Context, b badInputTarget) error {
				_, err := b.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: bad, Member: "m", Max: 1})
				return err
			})
		}
	}
	// Topic names: %DLQ%g names a topic the engine may have.
	for _, bad := range []string{"", "a b", "%DLQ%a b", "%RETRY%"} {
		wantTopic := equeue.ErrInvalidName
		add("Topic of "+bad, wantTopic, func(ctx context.Context, b badInputTarget) error { _, err := b.Topic(ctx, bad); return err })
		add("DeleteTopic of "+bad, wantTopic, func(ctx context.Context, b badInputTarget) error { return b.DeleteTopic(ctx, bad) })
		add("SetQueueWritable of "+bad, wantTopic, func(ctx context.Context, b badInputTarget) error { return b.SetQueueWritable(ctx, bad, 0, false) })
		add("SetTopicLimits of "+bad, wantTopic, func(ctx context.Context, b badInputTarget) error {
			return b.SetTopicLimits(ctx, bad, equeue.TopicLimits{MaxMessages: 1})
		})
		add("AddQueues of "+bad, wantTopic, func(ctx context.Context, b badInputTarget) error { return b.AddQueues(ctx, bad, 1) })
		wantAppend := wantTopic
		if strings.HasPrefix(bad, "%") {
			wantAppend = equeue.ErrInternalTopic
		}
		add("Append to "+bad, wantAppend, func(ctx context.Context, b badInputTarget) error {
			_, err := b.Append(ctx, &equeue.AppendRequest{Topic: bad, Messages: one})
			return err
		})
		add("Pull of topic "+bad, wantTopic, func(ctx context.Context, b badInputTarget) error {
			_, err := b.Pull(ctx, &equeue.PullRequest{Topic: bad, Max: 1})
			return err
		})
	}
	for _, bad := range []string{"", "a b", "%DLQ%g"} {
		wantRoute := equeue.ErrInvalidName
		if strings.HasPrefix(bad, "%") {
			wantRoute = equeue.ErrInternalTopic
		}
		add("Route of "+bad, wantRoute, func(ctx context.Context, b badInputTarget) error { _, err := b.Route(ctx, bad); return err })
	}
	for _, n := range []int{0, -1, math.MaxInt} {
		add(fmt.Sprintf("AddQueues of %d", n), equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error { return b.AddQueues(ctx, "t", n) })
	}
	add("CreateTopic of -1 queues", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error { return b.CreateTopic(ctx, "t", -1) })
	add("CreateTopicWith negative priorities", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		return b.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Priorities: -1})
	})
	add("SetTopicLimits negative", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		return b.SetTopicLimits(ctx, "t", equeue.TopicLimits{MaxMessages: -1})
	})
	add("Append nil message", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{nil}})
		return err
	})
	add("Append message of another topic", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "u"}}})
		return err
	})
	add("Append negative delay", equeue.ErrInvalidDelay, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Delay: -1}}})
		return err
	})
	add("Append negative TTL", equeue.ErrInvalidDelay, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{TTL: -1}}})
		return err
	})
	add("Append bad sync policy", equeue.ErrInvalidOptions, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: one, Sync: &badSync})
		return err
	})
	add("Append nothing", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t"})
		return err
	})
	add("Pull max -1", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: -1})
		return err
	})
	add("Pull negative wait", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Pull(ctx, &equeue.PullRequest{Topic: "t", Wait: -1})
		return err
	})
	add("Pull bad filter", equeue.ErrInvalidFilter, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: "a||"})
		return err
	})
	add("Pull nil", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error { _, err := b.Pull(ctx, nil); return err })
	for _, wait := range []time.Duration{0, time.Millisecond} {
		add(fmt.Sprintf("WaitAny of a nil pull for %v", wait), equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
			return b.WaitAny(ctx, []*equeue.PullRequest{{Topic: "t"}, nil}, wait)
		})
	}
	add("Delayed -1", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error { _, err := b.Delayed(ctx, -1); return err })
	add("DeadLetters max -1", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.DeadLetters(ctx, "g", 0, -1)
		return err
	})
	add("ListDeadLetters max huge", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: math.MaxInt})
		return err
	})
	add("Redrive of nothing", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Redrive(ctx, "g", equeue.RedriveRequest{})
		return err
	})
	add("Redrive of an inverted range", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Redrive(ctx, "g", equeue.RedriveRequest{From: 5, To: 1})
		return err
	})
	add("Redrive of a negative range", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Redrive(ctx, "g", equeue.RedriveRequest{From: -5, To: 1})
		return err
	})
	add("Redrive of a negative offset", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0, -1}})
		return err
	})
	add("ResetOffsets to an unknown target", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		return b.ResetOffsets(ctx, "g", equeue.ResetRequest{To: 99})
	})
	add("ResetOffsets to a negative offset", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		return b.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets, Offsets: map[equeue.QueueRef]int64{ref0: -1}})
	})
	add("CommitGroupOffsets negative", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		return b.CommitGroupOffsets(ctx, "x", map[equeue.QueueRef]int64{ref0: -1})
	})
	add("JoinGroup nil", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error { _, err := b.JoinGroup(ctx, nil); return err })
	add("JoinGroup without member", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		return err
	})
	add("Heartbeat nil", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error { _, err := b.Heartbeat(ctx, nil); return err })
	add("Heartbeat without member", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g"})
		return err
	})
	add("LeaveGroup without member", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		return b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g"})
	})
	add("CommitOffsets without member", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		return b.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Offsets: []equeue.OffsetCommit{{Grant: grant0}}})
	})
	add("SendBack negative offset", equeue.ErrInvalidArgument, func(ctx context.Context, b badInputTarget) error {
		_, err := b.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grant0, Offset: -1})
		return err
	})
	return cs
}

// populateForBadInput makes topic "t" with a message, group "g" with
// member "m", and a dead letter of g.
func populateForBadInput(t *testing.T, ctx context.Context, b badInputTarget) {
	require.NoError(t, b.CreateTopic(ctx, "t", 2))
	_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	a, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.NotEmpty(t, a.Queues)
	for _, q := range a.Queues {
		res, err := b.Pull(ctx, &equeue.PullRequest{Topic: q.Topic, Queue: q.Queue, Max: 1, Group: "g", Member: "m", Epoch: q.Epoch})
		require.NoError(t, err)
		for _, m := range res.Messages {
			_, err := b.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: q, Offset: m.Offset, DeadLetter: true})
			require.NoError(t, err)
		}
	}
	dls, err := b.DeadLetters(ctx, "g", 0, 10)
	require.NoError(t, err)
	require.Len(t, dls, 1)
}

// TestBadInput_SameErrorWhateverTheState sends every bad argument to an
// engine (and a namespace) that has neither the topic nor the group it
// names, and to one that has both, with dead letters: each gets the same
// documented error from both, as the argument is checked before the
// engine's state is looked at.
func TestBadInput_SameErrorWhateverTheState(t *testing.T) {
	targets := map[string]func(e *equeue.Engine) badInputTarget{
		"engine": func(e *equeue.Engine) badInputTarget { return e },
		"namespace": func(e *equeue.Engine) badInputTarget {
			n, err := e.Namespace("ns")
			require.NoError(t, err)
			return n
		},
	}
	for tname, target := range targets {
		for _, populated := range []bool{false, true} {
			state := "fresh"
			if populated {
				state = "populated"
			}
			t.Run(tname+"/"+state, func(t *testing.T) {
				ctx := ctxT(t)
				e, _ := openEngine(t, "memory", &equeue.Options{MaxDelay: time.Hour})
				b := target(e)
				if populated {
					populateForBadInput(t, ctx, b)
				}
				for _, c := range badInputCases() {
					var err error
					require.NotPanics(t, func() { err = c.call(ctx, b) }, c.name)
					assert.ErrorIs(t, err, c.want, c.name)
				}
			})
		}
	}
}

// A bad message in an append to an unknown topic is refused before the
// topic is made: auto-create makes no topic for an append it refuses.
func TestBadInput_RefusedAppendCreatesNoTopic(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{AutoCreateTopics: true})
	for _, m := range []*equeue.Message{nil, {Delay: -1}, {Topic: "other"}} {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "auto", Messages: []*equeue.Message{m}})
		require.Error(t, err)
	}
	_, err := e.Topic(ctx, "auto")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
}
