package equeue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// fillQueue appends n small messages to queue 0 of topic in batches.
func fillQueue(t testing.TB, e *equeue.Engine, topic string, n int) {
	t.Helper()
	ctx := context.Background()
	batch := make([]*equeue.Message, 0, 1000)
	for i := 0; i < n; i++ {
		batch = append(batch, &equeue.Message{Body: fmt.Appendf(nil, "m%07d", i)})
		if len(batch) == cap(batch) || i == n-1 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: topic, Queue: 0, Messages: batch})
			require.NoError(t, err)
			batch = batch[:0]
		}
	}
}

func TestRetention_ByAgeMovesWatermarkAndReclaims(t *testing.T) {
	ctx := ctxT(t)
	n := 100_000
	if testing.Short() {
		n = 20_000
	}
	e, reopen := openEngine(t, "badger", &equeue.Options{Sync: equeue.SyncNever, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	fillQueue(t, e, "t", n)
	time.Sleep(20 * time.Millisecond)
	mark := time.Now()
	time.Sleep(20 * time.Millisecond)
	fillQueue(t, e, "t", 10)
	before := e.Stats().StoreBytes

	res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Since(mark)})
	require.NoError(t, err)
	assert.Equal(t, int64(n), res.Deleted)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(n), info.Queues[0].MinOffset)
	assert.Equal(t, int64(n+10), info.Queues[0].MaxOffset)
	after := e.Stats().StoreBytes
	t.Logf("store size before retention %d bytes, after %d bytes", before, after)
	assert.Less(t, after, before, "disk space given back (%d -> %d bytes)", before, after)

	pr, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 5})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullOffsetMoved, pr.Status)
	assert.Equal(t, int64(n), pr.NextOffset)
	pr, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: int64(n)})
	require.NoError(t, err)
	require.Len(t, pr.Messages, 10)
	assert.Equal(t, fmt.Sprintf("m%07d", 0), string(pr.Messages[0].Body))

	// The watermark is stored: after a restart nothing below it comes back.
	e = reopen()
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(n), info.Queues[0].MinOffset)
	pr, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullOffsetMoved, pr.Status)

	// Deleting everything keeps the next offset.
	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond})
	require.NoError(t, err)
	e = reopen()
	p := newProducer(t, e, nil)
	r, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("next")})
	require.NoError(t, err)
	assert.Equal(t, int64(n+10), r.Offset, "offsets never go back after the queue was emptied")
}

func TestRetention_KeepUnconsumedAndSize(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	fillQueue(t, e, "t", 100)
	col := newCollector()
	c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			if m.Offset >= 40 {
				<-ctx.Done() // hold everything from 40 on
				return ctx.Err()
			}
			return col.handler("c")(ctx, m)
		}, HandoffTimeout: 50 * time.Millisecond})
	eventually(t, 10*time.Second, func() bool { return col.count() == 40 }, "40 consumed")
	waitWindow(t, c, "t", 40)
	require.NoError(t, c.Commit(ctx))
	res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true})
	require.NoError(t, err)
	assert.Equal(t, int64(40), res.Deleted, "only what the group committed")

	// Size: each pass trims a tenth of the queue while the store is too big.
	require.NoError(t, e.CreateTopic(ctx, "big", 1))
	fillQueue(t, e, "big", 1000)
	res, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: -1, MaxBytes: 1})
	require.NoError(t, err)
	info, err := e.Topic(ctx, "big")
	require.NoError(t, err)
	assert.Equal(t, int64(100), info.Queues[0].MinOffset)
	info, err = e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(46), info.Queues[0].MinOffset, "KeepUnconsumed was not asked for: t loses a tenth of its 60")
}

func TestRetention_BackgroundPass(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{MaxAge: 50 * time.Millisecond, Interval: 20 * time.Millisecond}})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	fillQueue(t, e, "t", 10)
	eventually(t, 10*time.Second, func() bool {
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		return info.Queues[0].MinOffset == 10
	}, "old messages deleted in the background")
}

// reclaimCounter counts the store's Reclaim calls.
type reclaimCounter struct {
	equeue.Store
	reclaims atomic.Int64
}

func (s *reclaimCounter) Reclaim() error {
	s.reclaims.Add(1)
	return s.Store.Reclaim()
}

// TestRetention_ReclaimsADeletedTopic: the records of a deleted topic give
// their space back at the next retention pass, even one that deletes
// nothing itself; a pass after that does not reclaim again.
func TestRetention_ReclaimsADeletedTopic(t *testing.T) {
	ctx := ctxT(t)
	st := &reclaimCounter{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: st, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	sendN(t, newProducer(t, e, nil), "t", 10, nil)

	res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{})
	require.NoError(t, err)
	require.Zero(t, res.Deleted)
	assert.Zero(t, st.reclaims.Load(), "nothing deleted, nothing to reclaim")

	require.NoError(t, e.DeleteTopic(ctx, "t"))
	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.reclaims.Load(), "the deleted topic's space is reclaimed")
	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{})
	require.NoError(t, err)
	assert.Equal(t, int64(1), st.reclaims.Load(), "once")
}

// KeepUnconsumed with a broadcasting group: every member reads everything,
// so a member that has joined but not yet committed on a queue holds its
// messages back, as a clustering group that has not started on it does.
func TestRetention_KeepUnconsumedWaitsForEveryBroadcastMember(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	fillQueue(t, e, "t", 10)
	join := func(member string) equeue.Grant {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "b", Member: member, Model: equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest})
		require.NoError(t, err)
		require.Len(t, a.Queues, 1)
		return a.Queues[0]
	}
	commit := func(member string, g equeue.Grant, off int64) {
		require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "b", Member: member,
			Offsets: []equeue.OffsetCommit{{Grant: g, Offset: off}}}))
	}
	a := join("a")
	commit("a", a, 10)
	b := join("b")
	res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true})
	require.NoError(t, err)
	assert.Zero(t, res.Deleted, "member b has read nothing yet")
	commit("b", b, 4)
	res, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true})
	require.NoError(t, err)
	assert.Equal(t, int64(4), res.Deleted, "what both members committed")
}

// A group's model changes when its first member after an empty spell
// joins with the other one. The offsets of the former model (a
// broadcasting member's own, or a clustering group's shared one) are read
// by nobody then, so they must not hold KeepUnconsumed retention back:
// they used to, for good, and even GroupIdleTTL did not forget them in a
// group turned clustering.
func TestRetention_KeepUnconsumedIgnoresTheFormerModelsOffsets(t *testing.T) {
	for _, from := range []equeue.MessageModel{equeue.Broadcasting, equeue.Clustering} {
		to := equeue.Clustering
		if from == equeue.Clustering {
			to = equeue.Broadcasting
		}
		t.Run(from.String()+"-to-"+to.String(), func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			fillQueue(t, e, "t", 10)
			consume := func(member string, model equeue.MessageModel, off int64) {
				a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: member, Model: model,
					Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest})
				require.NoError(t, err)
				require.Len(t, a.Queues, 1)
				_, err = e.FetchOffsets(ctx, "g", member, a.Queues)
				require.NoError(t, err)
				require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: member,
					Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: off}}}))
			}
			consume("old", from, 2)
			require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "old"}))
			consume("new", to, 10)

			gi, err := e.Group(ctx, "g")
			require.NoError(t, err)
			require.Equal(t, to, gi.Model)
			for _, q := range gi.Queues {
				assert.Equal(t, int64(10), q.Committed, "row of %q: only the current model's offsets are shown", q.Owner)
				assert.Zero(t, q.Lag, "row of %q", q.Owner)
			}
			res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true})
			require.NoError(t, err)
			assert.Equal(t, int64(10), res.Deleted, "the group consumed everything under its current model")
		})
	}
}
