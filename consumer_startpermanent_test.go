package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// fetchFailBroker is an engine whose FetchOffsets fails with err: a broker
// of its own (no Unwrap), as a remote one is.
type fetchFailBroker struct {
	*equeue.Engine
	err error
}

func (b *fetchFailBroker) FetchOffsets(context.Context, string, string, []equeue.Grant) ([]equeue.OffsetCommit, error) {
	return nil, b.err
}

// fetchFailWrapper is fetchFailBroker wrapping its engine (BrokerWrapper):
// the consumer's broker is this process's engine.
type fetchFailWrapper struct{ fetchFailBroker }

func (w *fetchFailWrapper) Unwrap() equeue.Broker { return w.Engine }

// startWithin runs c.Start(ctx) and returns its error, failing the test
// when Start has not returned after a bound far past any apply's.
func startWithin(t *testing.T, c *equeue.Consumer, ctx context.Context) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(waitLong):
		_ = c.Close() // lets the Start return
		<-done
		t.Fatal("Start waited for an apply that cannot succeed")
		return nil
	}
}

// A Consumer's Start whose join's grants cannot be applied for a reason
// that lasts (the engine or client closed, the store unusable or stopped
// by a failed fsync, on an engine of this process; the client closed, on
// a broker of its own) returns an error wrapping it, with a ctx that never
// ends, instead of trying again until Close; the consumer is closed by it,
// a Close after it returns nil and no goroutine is left.
func TestConsumer_StartReturnsAPermanentApplyFailure(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		own  bool // a broker of its own (remote), not this process's engine
	}{
		{"closed", fmt.Errorf("engine: %w", equeue.ErrClosed), false},
		{"client closed", fmt.Errorf("remote: %w", equeue.ErrClosed), true},
		{"unusable", fmt.Errorf("fetch: %w", store.ErrUnusable), false},
		{"store failed", fmt.Errorf("%w: %w", equeue.ErrStoreFailed, faultstore.ErrInjected), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctxT(t), "t", 2))
			leaks := goleak.IgnoreCurrent() // the engine's own
			var b equeue.Broker = &fetchFailWrapper{fetchFailBroker{Engine: e, err: tc.err}}
			if tc.own {
				b = &fetchFailBroker{Engine: e, err: tc.err}
			}
			c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: "a",
				Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
				Handler: func(context.Context, *equeue.Message) error { return nil }})
			require.NoError(t, err)
			err = startWithin(t, c, context.Background())
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.err), "Start's error wraps the apply's: %v", err)
			require.NoError(t, c.Close())
			assert.ErrorIs(t, c.Start(ctxT(t)), equeue.ErrClosed, "the consumer was closed by the failed Start")
			goleak.VerifyNone(t, leaks)
			gi, err := e.Group(ctxT(t), "g")
			require.NoError(t, err)
			assert.Empty(t, gi.Members, "the failed Start left the group")
		})
	}
}

// A Consumer's Start on an engine whose writes a failed fsync stopped
// (the start of a group from the latest message cannot be stored) returns
// ErrStoreFailed instead of waiting for a reopen that never comes.
func TestConsumer_StartReturnsAfterAFailedFsync(t *testing.T) {
	r := newFaultRig(t, "memory", nil) // SyncAlways
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	// The group is made (and stored) first by a member that stays: the
	// join of a broadcasting consumer beside it writes nothing, the first
	// apply of its grants (its own start in each queue) does.
	join := &equeue.JoinRequest{Group: "g", Member: "x", Model: equeue.Broadcasting, From: equeue.ConsumeFromLatest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}}
	_, err := r.E.JoinGroup(ctxBG, join)
	require.NoError(t, err)
	r.FS.FailSyncs(1)
	_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("lost")})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	require.Error(t, r.E.StoreFailure())
	c, err := equeue.NewConsumer(r.E, equeue.ConsumerOptions{Group: "g", ID: "a", Model: equeue.Broadcasting, From: equeue.ConsumeFromLatest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	err = startWithin(t, c, context.Background())
	require.ErrorIs(t, err, equeue.ErrStoreFailed)
	require.NoError(t, c.Close())
}
