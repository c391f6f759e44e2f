package remote_test

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// Scenario 8: with MaxMessageSize 6 MiB, a 3 MiB then a 6 MiB message used
// to make one pull answer larger than the client accepts, failing every
// pull forever. The answer now stops where the client's limit would be
// passed, and the consumer receives both.
func TestAnswer_LargeMessagesReachARemoteConsumer(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{MaxMessageSize: 6 << 20})
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, nil)
	require.NoError(t, e.CreateTopic(ctx, "big", 1))
	p := newProducer(t, c)
	sizes := []int{3 << 20, 6<<20 - 4<<10} // the second just under the engine's limit
	for i, n := range sizes {
		_, err := p.Send(ctx, &equeue.Message{Topic: "big", Body: bytes.Repeat([]byte{byte('a' + i)}, n)})
		require.NoError(t, err, "message %d", i)
	}
	got := make(chan int, len(sizes))
	startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "big"}},
		From: equeue.ConsumeFromEarliest, Handler: func(_ context.Context, m *equeue.Message) error {
			got <- len(m.Body)
			return nil
		}})
	for i := range sizes {
		select {
		case n := <-got:
			assert.Equal(t, sizes[i], n)
		case <-ctx.Done():
			t.Fatalf("consumer handled %d of %d messages", i, len(sizes))
		}
	}
}

// A single message larger than what the client accepts is a clear
// ErrMessageTooLarge naming it, and the pull answer never passes the limit.
func TestAnswer_MessageLargerThanTheClientAccepts(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	small := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 1 << 20})
	for _, n := range []int{600 << 10, 600 << 10, 2 << 20} {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, n)}}})
		require.NoError(t, err)
	}
	res, err := small.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1, "the second would pass the client's limit")
	assert.Equal(t, int64(1), res.NextOffset)
	res, err = small.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, int64(2), res.NextOffset)
	_, err = small.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 2, Wait: time.Second})
	assert.ErrorIs(t, err, equeue.ErrMessageTooLarge)
	assert.Contains(t, err.Error(), "t/0 offset 2")
}

// A consumer whose client cannot receive a stored message (its
// MaxMessageBytes is below the message's size) does not stay stuck on it:
// the message goes to the group's dead letters, by reference, with a cause
// naming the limit, and the messages after it are handled.
func TestAnswer_ConsumerDeadLettersAMessageItCannotReceive(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := startServer(t, e, "", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, n := range []int{10, 2 << 20, 20} {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, n)}}})
		require.NoError(t, err)
	}
	small := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 1 << 20})
	got := make(chan int, 4)
	c, err := equeue.NewConsumer(small, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *equeue.Message) error { got <- len(m.Body); return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	for _, want := range []int{10, 20} {
		select {
		case n := <-got:
			assert.Equal(t, want, n)
		case <-ctx.Done():
			t.Fatalf("the consumer is stuck before the %d-byte message", want)
		}
	}
	require.NoError(t, c.Close())
	dead, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: 0, Max: 10})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, int64(1), dead[0].Message.Offset, "the dead letter is the message at offset 1")
	assert.Len(t, dead[0].Message.Body, 2<<20, "stored whole, by the engine")
	assert.Contains(t, dead[0].LastError, "t/0 offset 1 is 2097")
	info, err := e.Group(ctx, "g")
	require.NoError(t, err)
	for _, q := range info.Queues {
		if q.Topic == "t" {
			assert.Equal(t, int64(3), q.Committed, "the group committed past all three")
		}
	}
}

// When moving the too-large message to the dead letters fails (the store
// refuses that write), nothing is stored and the consumer tries again: the
// message ends up in the dead letters exactly once, and the queue goes on.
func TestAnswer_TooLargeDeadLetterWriteFailsThenSucceeds(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	s := startServer(t, e, "", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for _, n := range []int{10, 2 << 20, 20} {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, n)}}})
		require.NoError(t, err)
	}
	var failed atomic.Int32
	fs.OnWrite(func(b *store.Batch) error {
		for _, en := range b.Entries {
			if len(en.Value) > 1<<20 && failed.CompareAndSwap(0, 1) {
				return errors.New("injected: the dead-letter write fails once")
			}
		}
		return nil
	})
	small := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 1 << 20})
	got := make(chan int, 4)
	c, err := equeue.NewConsumer(small, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *equeue.Message) error { got <- len(m.Body); return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	for _, want := range []int{10, 20} {
		select {
		case n := <-got:
			assert.Equal(t, want, n)
		case <-ctx.Done():
			t.Fatalf("the consumer is stuck before the %d-byte message", want)
		}
	}
	require.NoError(t, c.Close())
	assert.Equal(t, int32(1), failed.Load(), "the first dead-letter write was refused")
	dead, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 10})
	require.NoError(t, err)
	require.Len(t, dead, 1, "stored once, by the retry after the refused write")
	assert.Equal(t, int64(1), dead[0].Message.Offset)
}
