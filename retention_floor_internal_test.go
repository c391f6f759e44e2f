package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetention_KeepUnconsumedCountsAGroupThatAppearsDuringThePass: a
// group that starts consuming a topic while a retention pass keeping
// unconsumed messages runs (after the pass worked out a queue's floor,
// before it moved the watermark) loses nothing it has not consumed: the
// pass either counts it or moves the watermark before the group's position
// is set, so that the group starts at or above it.
func TestRetention_KeepUnconsumedCountsAGroupThatAppearsDuringThePass(t *testing.T) {
	cases := map[string]func(ctx context.Context, t *testing.T, e *Engine){
		"a group coordinated outside commits": func(ctx context.Context, t *testing.T, e *Engine) {
			require.NoError(t, e.CommitGroupOffsets(ctx, "late", map[QueueRef]int64{{Topic: "t", Queue: 0}: 3}))
		},
		"a group joins and fetches its start": func(ctx context.Context, t *testing.T, e *Engine) {
			a, err := e.JoinGroup(ctx, &JoinRequest{Group: "late", Member: "m", From: ConsumeFromEarliest,
				Subscriptions: []Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			_, err = e.FetchOffsets(ctx, "late", "m", a.Queues)
			require.NoError(t, err)
		},
	}
	for name, appear := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			e, err := Open("", &Options{InMemory: true, Retention: RetentionPolicy{Interval: -1}})
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			for range 10 {
				_, err := e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{Body: []byte("x")}}})
				require.NoError(t, err)
			}
			hooked := 0
			e.groups.floorHook = func(q QueueRef) {
				if hooked++; hooked == 1 {
					appear(ctx, t, e)
				}
			}
			_, err = e.ApplyRetention(ctx, RetentionPolicy{MaxAge: time.Nanosecond, KeepUnconsumed: true})
			require.NoError(t, err)
			require.Positive(t, hooked, "the pass worked out the queue's floor")

			g, err := e.groups.group("late")
			require.NoError(t, err)
			g.mu.Lock()
			off, ok := g.offsets[offsetKey{q: QueueRef{Topic: "t", Queue: 0}}]
			g.mu.Unlock()
			require.True(t, ok, "the group has a position on t/0")
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.LessOrEqual(t, info.Queues[0].MinOffset, off,
				"the watermark passed the position of a group that was there before it moved")
		})
	}
}
