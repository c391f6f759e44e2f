package equeue

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConsumer_OrderlyCloseStartsNoNewMessage: in orderly mode Close lets
// the running handler finish but begins no other message of what the
// queue's last pull fetched; those stay uncommitted for the next start.
func TestConsumer_OrderlyCloseStartsNoNewMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	msgs := make([]*Message, 5)
	for i := range msgs {
		msgs[i] = &Message{Body: []byte{byte(i)}}
	}
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: msgs})
	require.NoError(t, err)

	started := make(chan struct{})
	release := make(chan struct{})
	var handled atomic.Int64
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Orderly: true, Subscriptions: []Subscription{{Topic: "t"}},
		CommitInterval: time.Hour, ShutdownTimeout: time.Minute,
		Handler: func(ctx context.Context, m *Message) error {
			if m.Offset == 0 {
				close(started)
				<-release
			}
			handled.Add(1)
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	<-started
	c.mu.Lock()
	var r *runner
	for _, x := range c.runners {
		r = x
	}
	c.mu.Unlock()
	require.NotNil(t, r)

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	waitFor(t, func() bool { return r.ctx.Err() != nil }, "Close stopped the pull loop")
	close(release)
	require.NoError(t, <-closed)
	assert.Equal(t, int64(1), handled.Load(), "Close began no message after the running one")
	info, err := e.Group(ctx, "g")
	require.NoError(t, err)
	require.Len(t, info.Queues, 1)
	assert.Equal(t, int64(1), info.Queues[0].Committed, "the commit passes what was handled")
}

// slowJoinBroker holds JoinGroup until released, as a slow network would.
type slowJoinBroker struct {
	Broker
	entered chan struct{}
	release chan struct{}
}

func (b *slowJoinBroker) JoinGroup(ctx context.Context, req *JoinRequest) (Assignment, error) {
	close(b.entered)
	<-b.release
	return b.Broker.JoinGroup(ctx, req)
}

// TestConsumer_CloseDuringStartLeavesNoMember: a Close that comes while
// Start is joining the group must not leave the closed consumer a member
// of the group, holding queues nobody consumes until its session expires.
func TestConsumer_CloseDuringStartLeavesNoMember(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	handler := func(context.Context, *Message) error { return nil }
	b, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "b", Subscriptions: []Subscription{{Topic: "t"}}, Handler: handler})
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	defer func() { require.NoError(t, b.Close()) }()

	slow := &slowJoinBroker{Broker: e, entered: make(chan struct{}), release: make(chan struct{})}
	a, err := NewConsumer(slow, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}}, Handler: handler})
	require.NoError(t, err)
	started := make(chan error, 1)
	go func() { started <- a.Start(ctx) }()
	<-slow.entered
	require.NoError(t, a.Close())
	close(slow.release)
	assert.ErrorIs(t, <-started, ErrClosed, "Start of a consumer closed meanwhile")
	info, err := e.Group(ctx, "g")
	require.NoError(t, err)
	ids := make([]string, 0, len(info.Members))
	for _, m := range info.Members {
		ids = append(ids, m.ID)
	}
	assert.Equal(t, []string{"b"}, ids, "the closed consumer is no member of the group")
}

// TestConsumer_OrderlyBatchCloseStartsNoNewRun: an orderly batch whose
// first message is dead-lettered while Close waits for it runs the rest of
// the batch no more: they stay uncommitted for the next owner.
func TestConsumer_OrderlyBatchCloseStartsNoNewRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: []*Message{{Body: []byte("0")}, {Body: []byte("1")}, {Body: []byte("2")}}})
	require.NoError(t, err)

	started := make(chan struct{})
	release := make(chan struct{})
	var calls atomic.Int64
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Orderly: true, Subscriptions: []Subscription{{Topic: "t"}},
		BatchSize: 3, CommitInterval: time.Hour, ShutdownTimeout: time.Minute,
		BatchHandler: func(ctx context.Context, msgs []*Message) error {
			if calls.Add(1) == 1 {
				close(started)
				<-release
				return &BatchError{Failed: map[int]error{0: DeadLetter(errors.New("bad"))}}
			}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	<-started
	c.mu.Lock()
	var r *runner
	for _, x := range c.runners {
		r = x
	}
	c.mu.Unlock()
	require.NotNil(t, r)

	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	waitFor(t, func() bool { return r.ctx.Err() != nil }, "Close stopped the pull loop")
	close(release)
	require.NoError(t, <-closed)
	assert.Equal(t, int64(1), calls.Load(), "Close began no run after the running one")
	dl, err := e.ListDeadLetters(ctx, "g", ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dl, 1)
	info, err := e.Group(ctx, "g")
	require.NoError(t, err)
	require.Len(t, info.Queues, 1)
	assert.Equal(t, int64(1), info.Queues[0].Committed, "the commit passes the dead letter only")
}
