package equeue

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// heldSendBackStore holds the first store write of a send-back (the one
// carrying its mark) from when hold is armed until open is called.
type heldSendBackStore struct {
	Store
	armed  atomic.Bool
	held   chan struct{} // closed when a send-back's write is held
	gate   chan struct{} // closed by open
	onceH  sync.Once
	onceG  sync.Once
	copies atomic.Int64 // send-back writes that reached the store
}

func newHeldSendBackStore() *heldSendBackStore {
	return &heldSendBackStore{Store: store.NewMemory(), held: make(chan struct{}), gate: make(chan struct{})}
}

func (s *heldSendBackStore) open() { s.onceG.Do(func() { close(s.gate) }) }

func (s *heldSendBackStore) Write(b *store.Batch) error {
	sendBack := false
	for _, op := range b.Meta {
		if !op.Delete && bytes.HasPrefix(op.Key, keySentBackPrefix) {
			sendBack = true
		}
	}
	if sendBack && s.armed.Load() {
		s.onceH.Do(func() { close(s.held) })
		<-s.gate
	}
	err := s.Store.Write(b)
	if sendBack && err == nil {
		s.copies.Add(1)
	}
	return err
}

// openHeld opens an engine on a heldSendBackStore with a one-queue topic t
// holding one message.
func openHeld(t *testing.T, ctx context.Context) (*Engine, *heldSendBackStore) {
	t.Helper()
	s := newHeldSendBackStore()
	t.Cleanup(s.open)
	e, err := Open("", &Options{Store: s})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Queue: 0, Messages: []*Message{{Body: []byte("x")}}})
	require.NoError(t, err)
	return e, s
}

// committedOf returns the group's committed offset of t/0, -1 when none.
func committedOf(t *testing.T, ctx context.Context, e *Engine, group string) int64 {
	t.Helper()
	gi, err := e.Group(ctx, group)
	require.NoError(t, err)
	for _, q := range gi.Queues {
		if q.Topic == "t" && q.Queue == 0 {
			return q.Committed
		}
	}
	return -1
}

// runnerOf returns c's runner of t/0.
func runnerOf(c *Consumer) *runner {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runners[QueueRef{Topic: "t", Queue: 0}]
}

// TestConsumer_HandoverWaitsForWatchdogSendBack: the ConsumeTimeout
// watchdog sends back a stuck message; its write is still in flight when
// the queue is handed over and the drain gives up on the stuck handler.
// The drain must wait for that send-back (as for any failure path's), so
// that the commit before the release passes the message: committing
// without it while the retry copy is stored delivers the message twice
// (to the next owner from its queue, and from the retry topic).
func TestConsumer_HandoverWaitsForWatchdogSendBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, s := openHeld(t, ctx)
	running, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	b, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "b", Subscriptions: []Subscription{{Topic: "t"}},
		ConsumeTimeout: 40 * time.Millisecond, HandoffTimeout: 20 * time.Millisecond, CommitInterval: time.Hour,
		HeartbeatInterval: 50 * time.Millisecond, RetryTopicDelays: []time.Duration{time.Hour},
		Handler: func(ctx context.Context, m *Message) error {
			if first.CompareAndSwap(false, true) {
				close(running)
				<-release // stuck, deaf to its context
			}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	defer func() { require.NoError(t, b.Close()) }()
	defer close(release) // before Close, which waits for every handler
	<-running
	r := runnerOf(b)
	require.NotNil(t, r)
	s.armed.Store(true)
	select {
	case <-s.held: // the watchdog's send-back is being written
	case <-ctx.Done():
		t.Fatal("the watchdog sent nothing back")
	}
	// A second member takes t/0 over (the average strategy gives the one
	// queue to the first ID): b hands it over while its send-back is held.
	a, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}},
		CommitInterval: time.Hour, HeartbeatInterval: 50 * time.Millisecond, RetryTopicDelays: []time.Duration{time.Hour},
		Handler: func(context.Context, *Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, a.Start(ctx))
	defer func() { require.NoError(t, a.Close()) }()
	defer s.open()
	waitFor(t, r.gaveUp.Load, "the handover's drain gives up on the stuck handler")
	s.open()
	waitFor(t, func() bool { return s.copies.Load() == 1 }, "the retry copy is stored")
	waitFor(t, func() bool { return runnerOf(a) != nil }, "the new member runs t/0")
	assert.Equal(t, int64(1), committedOf(t, ctx, e, "g"),
		"the handover's commit passes the message whose retry copy was stored (else it is delivered twice)")
}

// TestConsumer_OrderlyBatchDeadLetterWaitedForByClose: an orderly
// BatchHandler's failure that dead-letters a message while Close drains
// is a send-back in flight like any other: the drain's last wait must wait
// for it, so that the final commit passes the dead-lettered message (else
// it is both in the dead letters and delivered again).
func TestConsumer_OrderlyBatchDeadLetterWaitedForByClose(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, s := openHeld(t, ctx)
	running := make(chan struct{})
	var once sync.Once
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "a", Subscriptions: []Subscription{{Topic: "t"}},
		Orderly: true, MaxAttempts: 1, ShutdownTimeout: 20 * time.Millisecond, CommitInterval: time.Hour,
		HeartbeatInterval: 50 * time.Millisecond,
		BatchHandler: func(ctx context.Context, msgs []*Message) error {
			once.Do(func() { close(running) })
			<-ctx.Done() // cancelled at the drain's first deadline
			return errors.New("interrupted")
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	<-running
	r := runnerOf(c)
	require.NotNil(t, r)
	s.armed.Store(true)
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-s.held: // the dead letter is being written
	case <-ctx.Done():
		t.Fatal("nothing was dead-lettered")
	}
	waitFor(t, r.gaveUp.Load, "the drain's last wait ends")
	s.open()
	require.NoError(t, <-closed)
	require.Equal(t, int64(1), s.copies.Load(), "the dead letter was stored")
	assert.Equal(t, int64(1), committedOf(t, ctx, e, "g"),
		"the final commit passes the dead-lettered message (else it is delivered again)")
}
