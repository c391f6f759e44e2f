package equeue

import (
	"bytes"
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// TestRetention_HeldWatermarkWriteStallsNoUnrelatedGroup: while a retention
// pass keeping unconsumed messages waits for the store to take one
// topic's watermark, a group consuming another topic goes on: a member
// joins (a rebalance), the members' heartbeats answer, and Groups lists
// it. Only a group starting to count for the topic being cut waits.
func TestRetention_HeldWatermarkWriteStallsNoUnrelatedGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newHeldWatermarkStore()
	t.Cleanup(s.open)
	e, err := Open("", &Options{Store: s, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "cut", 1))
	require.NoError(t, e.CreateTopic(ctx, "other", 1))
	for range 5 {
		_, err := e.Append(ctx, &AppendRequest{Topic: "cut", Messages: []*Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	join := func(member string) error {
		_, err := e.JoinGroup(ctx, &JoinRequest{Group: "g", Member: member, Subscriptions: []Subscription{{Topic: "other"}}})
		return err
	}
	require.NoError(t, join("m1"))

	passed := startHeldPass(t, ctx, e, s)

	var joined, beat, listed atomic.Bool
	go func() {
		if join("m2") == nil {
			joined.Store(true)
		}
	}()
	go func() {
		for !joined.Load() && ctx.Err() == nil {
			time.Sleep(time.Millisecond) // heartbeat once the join went in (or the test ends)
		}
		if _, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "g", Member: "m1"}); err == nil {
			beat.Store(true)
		}
	}()
	go func() {
		for !joined.Load() && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		if gs, err := e.Groups(ctx); err == nil && len(gs) == 1 {
			listed.Store(true)
		}
	}()
	assert.Eventually(t, joined.Load, 10*time.Second, 5*time.Millisecond,
		"a join into a group of another topic waits for the held watermark write")
	assert.Eventually(t, beat.Load, 10*time.Second, 5*time.Millisecond,
		"a heartbeat of a group of another topic waits for the held watermark write")
	assert.Eventually(t, listed.Load, 10*time.Second, 5*time.Millisecond,
		"Groups waits for the held watermark write")
	select {
	case err := <-passed:
		t.Fatalf("the pass ended while its watermark write was held: %v", err)
	default:
	}

	s.open()
	require.NoError(t, <-passed)
	info, err := e.Topic(ctx, "cut")
	require.NoError(t, err)
	assert.Equal(t, int64(5), info.Queues[0].MinOffset, "the pass moved the watermark once let through")
}

// TestRetention_HeldWatermarkWriteHoldsBackAJoinOfItsTopic: a group that
// starts consuming the topic a retention pass is cutting, while the pass
// waits for the store to take the watermark, still waits for the pass and
// starts at or above the new watermark.
func TestRetention_HeldWatermarkWriteHoldsBackAJoinOfItsTopic(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s := newHeldWatermarkStore()
	t.Cleanup(s.open)
	e, err := Open("", &Options{Store: s, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "cut", 1))
	for range 5 {
		_, err := e.Append(ctx, &AppendRequest{Topic: "cut", Messages: []*Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	passed := startHeldPass(t, ctx, e, s)
	joined := make(chan error, 1)
	go func() {
		a, err := e.JoinGroup(ctx, &JoinRequest{Group: "late", Member: "m", From: ConsumeFromEarliest,
			Subscriptions: []Subscription{{Topic: "cut"}}})
		if err == nil {
			_, err = e.FetchOffsets(ctx, "late", "m", a.Queues)
		}
		joined <- err
	}()
	require.Never(t, func() bool { return len(joined) > 0 }, 200*time.Millisecond, 5*time.Millisecond,
		"a group starting to count for the topic being cut waits for its watermark")
	s.open()
	require.NoError(t, <-passed)
	require.NoError(t, <-joined)
	g, err := e.groups.group("late")
	require.NoError(t, err)
	g.mu.Lock()
	off, ok := g.offsets[offsetKey{q: QueueRef{Topic: "cut", Queue: 0}}]
	g.mu.Unlock()
	require.True(t, ok, "the group has a position on cut/0")
	info, err := e.Topic(ctx, "cut")
	require.NoError(t, err)
	assert.Equal(t, int64(5), info.Queues[0].MinOffset)
	assert.LessOrEqual(t, info.Queues[0].MinOffset, off, "the group starts at or above the new watermark")
}

// newHeldWatermarkStore holds the first write carrying a queue's low
// watermark: a retention pass whose disk hangs while it moves one.
func newHeldWatermarkStore() *heldMetaStore {
	return newHeldMetaStore(func(op store.MetaOp) bool { return !op.Delete && bytes.HasPrefix(op.Key, keyWatermark) })
}

// startHeldPass arms s and starts a retention pass keeping unconsumed
// messages, returning once s holds its first watermark write; the pass's
// error comes on the channel once s lets it go.
func startHeldPass(t *testing.T, ctx context.Context, e *Engine, s *heldMetaStore) <-chan error {
	t.Helper()
	s.armed.Store(true)
	passed := make(chan error, 1)
	go func() {
		_, err := e.ApplyRetention(ctx, RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true})
		passed <- err
	}()
	select {
	case <-s.held:
	case <-ctx.Done():
		t.Fatal("the pass never wrote a watermark")
	}
	return passed
}
