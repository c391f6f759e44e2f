package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// kept reports whether e still keeps c and pc among its clients.
func kept(e *Engine, c *Consumer, pc *PullConsumer) (bool, bool) {
	e.clients.mu.Lock()
	defer e.clients.mu.Unlock()
	_, kc := e.clients.consumers[c]
	_, kpc := e.clients.pulls[pc]
	return kc, kpc
}

// A Consumer and a PullConsumer whose CloseContext was cut before its
// leave are kept by the engine for its Close to leave again, but no
// longer than their member's session: past it the engine may have
// expired the member, and what was kept for it is dropped. The engine
// kept every one until its Close, however many closes were cut.
func TestEngine_ForgetsACutCloseOnceItsSessionEnded(t *testing.T) {
	e, err := Open("", &Options{InMemory: true, SessionTimeout: 500 * time.Millisecond})
	require.NoError(t, err)
	defer func() { assert.NoError(t, e.Close()) }()
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	subs := []Subscription{{Topic: "t"}}
	c, err := NewConsumer(e, ConsumerOptions{Group: "g", ID: "c", Subscriptions: subs, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	pc, err := NewPullConsumer(e, PullConsumerOptions{Group: "h", ID: "p", Subscriptions: subs, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))

	cut, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, c.CloseContext(cut), context.Canceled)
	require.ErrorIs(t, pc.CloseContext(cut), context.Canceled)
	kc, kpc := kept(e, c, pc)
	require.True(t, kc && kpc, "kept for Engine.Close to leave again while the session runs")

	deadline := time.Now().Add(20 * time.Second)
	for kc || kpc {
		require.True(t, time.Now().Before(deadline), "the engine still keeps the cut closes (consumer %v, pull consumer %v) long past their session", kc, kpc)
		time.Sleep(20 * time.Millisecond)
		kc, kpc = kept(e, c, pc)
	}
	c.mu.Lock()
	assert.Nil(t, c.unfinished, "the consumer's redo is dropped")
	c.mu.Unlock()
	pc.mu.Lock()
	assert.Nil(t, pc.unfinished, "the pull consumer's redo is dropped")
	pc.mu.Unlock()
}
