package equeue_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// rewriteJoins changes each join on its way to the engine, as a refusal
// case asks, and counts the leaves sent.
type rewriteJoins struct {
	equeue.Broker
	rewrite func(*equeue.JoinRequest)
	joins   atomic.Int32
	leaves  atomic.Int32
}

func (b *rewriteJoins) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	b.joins.Add(1)
	r := *req
	if b.rewrite != nil {
		b.rewrite(&r)
	}
	return b.Broker.JoinGroup(ctx, &r)
}

func (b *rewriteJoins) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	b.leaves.Add(1)
	return b.Broker.LeaveGroup(ctx, req)
}

// membersOf lists the member IDs of group, none when it does not exist.
func membersOf(t *testing.T, e *equeue.Engine, group string) []string {
	t.Helper()
	gi, err := e.Group(ctxT(t), group)
	if errors.Is(err, equeue.ErrGroupNotFound) || errors.Is(err, equeue.ErrInvalidName) {
		return nil
	}
	require.NoError(t, err)
	var ids []string
	for _, m := range gi.Members {
		ids = append(ids, m.ID)
	}
	return ids
}

// joinRefusal is one way the engine refuses a join: setup prepares the
// engine, rewrite changes the consumer's join request, cause is the
// sentinel the refusal matches.
type joinRefusal struct {
	name    string
	setup   func(t *testing.T, r *faultRig)
	rewrite func(*equeue.JoinRequest)
	cancel  bool // Start's context has ended
	cause   error
	members []string // the group's members after the refusal
}

// joinRefusals walks every refusal of Engine.JoinGroup, in the order it
// checks them.
func joinRefusals() []joinRefusal {
	other := func(t *testing.T, r *faultRig, req equeue.JoinRequest) {
		t.Helper()
		_, err := r.E.JoinGroup(ctxT(t), &req)
		require.NoError(t, err)
	}
	return []joinRefusal{
		{name: "closed engine", setup: func(t *testing.T, r *faultRig) { require.NoError(t, r.E.Close()) }, cause: equeue.ErrClosed},
		{name: "context ended", cancel: true, cause: context.Canceled},
		{name: "invalid group name", rewrite: func(q *equeue.JoinRequest) { q.Group = "bad/name" }, cause: equeue.ErrInvalidName},
		{name: "invalid member ID", rewrite: func(q *equeue.JoinRequest) { q.Member = "c\x00" }, cause: equeue.ErrInvalidArgument},
		{name: "unknown model", rewrite: func(q *equeue.JoinRequest) { q.Model = 9 }, cause: equeue.ErrInvalidArgument},
		{name: "unknown consume-from", rewrite: func(q *equeue.JoinRequest) { q.From = 9 }, cause: equeue.ErrInvalidArgument},
		{name: "unknown strategy", rewrite: func(q *equeue.JoinRequest) { q.Strategy = "nope" }, cause: equeue.ErrInvalidArgument},
		{name: "claimed name", setup: func(t *testing.T, r *faultRig) { require.NoError(t, r.E.ClaimGroup(ctxT(t), "g", time.Hour)) }, cause: equeue.ErrGroupNameTaken},
		{name: "no subscriptions", rewrite: func(q *equeue.JoinRequest) { q.Subscriptions = nil }, cause: equeue.ErrInvalidArgument},
		{name: "too many subscriptions", rewrite: func(q *equeue.JoinRequest) {
			q.Subscriptions = make([]equeue.Subscription, equeue.MaxSubscriptions+1)
		}, cause: equeue.ErrInvalidArgument},
		{name: "invalid filter", rewrite: func(q *equeue.JoinRequest) { q.Subscriptions = []equeue.Subscription{{Topic: "t", Filter: "a||"}} }, cause: equeue.ErrInvalidFilter},
		{name: "topic not found", rewrite: func(q *equeue.JoinRequest) { q.Subscriptions = []equeue.Subscription{{Topic: "missing"}} }, cause: equeue.ErrTopicNotFound},
		{name: "another group's retry topic", rewrite: func(q *equeue.JoinRequest) {
			q.Subscriptions = []equeue.Subscription{{Topic: equeue.RetryTopic("other")}}
		}, cause: equeue.ErrInvalidName},
		{name: "topic twice", rewrite: func(q *equeue.JoinRequest) { q.Subscriptions = []equeue.Subscription{{Topic: "t"}, {Topic: "t"}} }, cause: equeue.ErrInvalidArgument},
		{name: "incarnation left", setup: func(t *testing.T, r *faultRig) {
			other(t, r, equeue.JoinRequest{Group: "g", Member: "c", Incarnation: "old", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, r.E.LeaveGroup(ctxT(t), &equeue.LeaveRequest{Group: "g", Member: "c", Incarnation: "old"}))
		}, rewrite: func(q *equeue.JoinRequest) { q.Incarnation = "old" }, cause: equeue.ErrNotMember},
		{name: "member ID in use", setup: func(t *testing.T, r *faultRig) {
			other(t, r, equeue.JoinRequest{Group: "g", Member: "c", Incarnation: "live", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		}, cause: equeue.ErrMemberIDInUse, members: []string{"c"}},
		{name: "subscription mismatch", setup: func(t *testing.T, r *faultRig) {
			other(t, r, equeue.JoinRequest{Group: "g", Member: "x", Subscriptions: []equeue.Subscription{{Topic: "u"}}})
		}, cause: equeue.ErrSubscriptionMismatch, members: []string{"x"}},
		{name: "group not stored", setup: func(t *testing.T, r *faultRig) {
			r.FS.OnWrite(func(*store.Batch) error { return store.ErrNoSpace })
		}, cause: equeue.ErrNoSpace},
	}
}

// Every refusal of a join is marked as one (ErrJoinRefused), and a Start
// refused so sends no leave: the refusal added no member, as the group
// shows.
func TestStart_JoinRefusalsSendNoLeaveAndLeaveNoMember(t *testing.T) {
	for _, kind := range []string{"consumer", "pull consumer"} {
		for _, tc := range joinRefusals() {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				r := newFaultRig(t, "memory", &equeue.Options{SessionTimeout: time.Hour})
				require.NoError(t, r.E.CreateTopic(ctxT(t), "t", 2))
				require.NoError(t, r.E.CreateTopic(ctxT(t), "u", 2))
				if tc.setup != nil {
					tc.setup(t, r)
				}
				b := &rewriteJoins{Broker: r.E, rewrite: tc.rewrite}
				ctx := ctxT(t)
				if tc.cancel {
					c, cancel := context.WithCancel(ctx)
					cancel()
					ctx = c
				}
				subs := []equeue.Subscription{{Topic: "t"}}
				var err error
				var leaves int32 // sent by Start, before Close
				if kind == "consumer" {
					c, nerr := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: subs,
						Handler: func(context.Context, *equeue.Message) error { return nil }})
					require.NoError(t, nerr)
					err = c.Start(ctx)
					leaves = b.leaves.Load()
					require.NoError(t, c.Close())
				} else {
					pc, nerr := equeue.NewPullConsumer(b, equeue.PullConsumerOptions{Group: "g", ID: "c", Subscriptions: subs})
					require.NoError(t, nerr)
					err = pc.Start(ctx)
					leaves = b.leaves.Load()
					require.NoError(t, pc.Close())
				}
				require.Error(t, err)
				assert.ErrorIs(t, err, tc.cause)
				assert.ErrorIs(t, err, equeue.ErrJoinRefused, "a refusal says so: %v", err)
				require.NotZero(t, b.joins.Load())
				assert.Zero(t, leaves, "no leave after a refused join")
				r.FS.OnWrite(nil)
				e := r.E
				if strings.HasPrefix(tc.name, "closed") {
					e = r.reopen()
				}
				assert.ElementsMatch(t, tc.members, membersOf(t, e, "g"), "the refusal left no member")
			})
		}
	}
}
