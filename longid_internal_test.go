package equeue

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLongIDs_StoredBeforeTheLimitStillMoveOn: a message stored with an ID
// longer than MaxIDBytes (accepted before IDs had a limit) is sent back to
// the dead letters and redriven like any other: the limit holds for new
// sends only. Without that, its send-back failed for good, the consumer
// retried it locally forever and its queue's committed offset never
// passed it (found by review).
func TestLongIDs_StoredBeforeTheLimitStillMoveOn(t *testing.T) {
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, e.CreateTopicWith(ctx, "t", TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	long := strings.Repeat("L", MaxIDBytes+904)
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{ID: long, Body: []byte("new")}}})
	require.ErrorIs(t, err, ErrInvalidArgument, "a new send with it is refused")
	// As an older engine stored it.
	_, err = e.Append(storedAgain(ctx), &AppendRequest{Topic: "t", Messages: []*Message{{ID: long, Body: []byte("old")}}})
	require.NoError(t, err)

	seen := make(chan *Message, 10)
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", Subscriptions: []Subscription{{Topic: "t"}}, Handler: func(_ context.Context, m *Message) error {
		seen <- m
		return DeadLetter(errors.New("no"))
	}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer c.Close()
	select {
	case m := <-seen:
		assert.Equal(t, long, m.ID)
	case <-ctx.Done():
		t.Fatal("not handled")
	}
	var dead []DLQEntry
	require.Eventually(t, func() bool {
		dead, err = e.DeadLetters(ctx, "g", 0, 10)
		return err == nil && len(dead) == 1
	}, 20*time.Second, 10*time.Millisecond, "dead-lettered")
	require.Eventually(t, func() bool {
		offs, err := e.GroupOffsets(ctx, "g")
		return err == nil && offs[QueueRef{Topic: "t"}] == 1
	}, 20*time.Second, 10*time.Millisecond, "the committed offset passes it")
	require.NoError(t, c.Close())

	n, err := e.Redrive(ctx, "g", RedriveRequest{All: true, ToTopic: true})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "redriven")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(2), info.Queues[0].MaxOffset, "back on its topic")
}

// TestGroup_DeparturesAreNotKeptWithoutAnIdleTTL: the times members left
// are kept only for GroupIdleTTL, which reads them; without it, a
// broadcasting group whose consumers restart with generated IDs would keep
// one per restart (found by review).
func TestGroup_DeparturesAreNotKeptWithoutAnIdleTTL(t *testing.T) {
	for _, ttl := range []time.Duration{0, time.Hour} {
		e, err := Open("", &Options{InMemory: true, GroupIdleTTL: ttl})
		require.NoError(t, err)
		ctx := context.Background()
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		for i := range 50 {
			id := strings.Repeat("m", 1+i%7) + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
			_, err := e.JoinGroup(ctx, &JoinRequest{Group: "b", Member: id, Model: Broadcasting, Subscriptions: []Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.NoError(t, e.LeaveGroup(ctx, &LeaveRequest{Group: "b", Member: id}))
		}
		g, err := e.groups.group("b")
		require.NoError(t, err)
		g.mu.Lock()
		n := len(g.left)
		g.mu.Unlock()
		if ttl == 0 {
			assert.Zero(t, n, "without GroupIdleTTL nothing reads them")
		} else {
			assert.Equal(t, 50, n, "with it each departure is kept until the TTL")
		}
		require.NoError(t, e.Close())
	}
}
