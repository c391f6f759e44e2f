package equeue_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// holdSyncs makes every Sync of r's store wait, from now, until the
// returned release runs (also at the end of the test); inSync is closed
// once one waits: a disk that does not answer.
func holdSyncs(t *testing.T, r *faultRig) (inSync <-chan struct{}, release func()) {
	t.Helper()
	in, held := make(chan struct{}), make(chan struct{})
	release = sync.OnceFunc(func() { close(held) })
	t.Cleanup(release)
	var once sync.Once
	r.FS.OnSync(func() error {
		once.Do(func() { close(in) })
		<-held
		return nil
	})
	return in, release
}

// TestEngine_CloseContextReturnsWhenItsContextEndsOnAHeldSync: a SyncAlways
// Send waits in a Sync that does not return, and the engine is closed with
// CloseContext. When the close's context ends, CloseContext returns at once
// with ErrCloseAbandoned and the context's error, while the close goes on:
// the directory stays locked, a second CloseContext is abandoned too, and
// the Send keeps waiting on its own context, which answers it
// ErrIndeterminate. Once the store answers, the close finishes: Close
// returns its result (nil), the write the Send was not acknowledged for
// is stored, and no goroutine is left.
func TestEngine_CloseContextReturnsWhenItsContextEndsOnAHeldSync(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // runs last: after the rig's close
	ctx := ctxT(t)
	r := newFaultRig(t, "badger", nil) // SyncAlways
	e := r.E
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)

	inSync, release := holdSyncs(t, r)
	sendCtx, cancelSend := context.WithCancel(ctx)
	defer cancelSend()
	sent := make(chan error, 1)
	go func() {
		_, err := p.Send(sendCtx, &equeue.Message{Topic: "t", Queue: 0, Body: []byte("held")})
		sent <- err
	}()
	select {
	case <-inSync:
	case <-ctx.Done():
		t.Fatal("the send's Sync was not reached")
	}

	closeCtx, cancelClose := context.WithCancel(ctx)
	closed := make(chan error, 1)
	go func() { closed <- e.CloseContext(closeCtx) }()
	eventually(t, waitLong, func() bool {
		_, err := e.Route(ctx, "t")
		return err != nil
	}, "the close starts: the engine takes no more calls")
	cancelClose()
	select {
	case err := <-closed:
		require.ErrorIs(t, err, equeue.ErrCloseAbandoned)
		require.ErrorIs(t, err, context.Canceled)
	case <-ctx.Done():
		release()
		t.Fatalf("CloseContext waits for the held store after its context ended (it returned %v)", <-closed)
	}

	// The close goes on in the background: the directory stays locked, and
	// another CloseContext whose context ends is abandoned as well.
	_, err := equeue.Open(r.dir, nil)
	require.ErrorIs(t, err, equeue.ErrLocked, "the store is not closed yet")
	ended, cancel := context.WithCancel(ctx)
	cancel()
	err = e.CloseContext(ended)
	require.ErrorIs(t, err, equeue.ErrCloseAbandoned)
	require.ErrorIs(t, err, context.Canceled)

	select {
	case err := <-sent:
		t.Fatalf("the send was answered before its context ended: %v", err)
	default:
	}
	cancelSend()
	err = <-sent
	require.ErrorIs(t, err, equeue.ErrIndeterminate, "handed to the writer: outcome unknown")
	require.ErrorIs(t, err, context.Canceled)

	release()
	assert.NoError(t, e.Close(), "the close finishes once the store answers; Close returns its result")
	assert.NoError(t, e.CloseContext(ended), "a finished close is returned, whatever the context")
	e = r.reopen()
	assert.Equal(t, []string{"held"}, queueBodies(t, e, "t", 0), "the write taken before the close is stored")
}

// TestEngine_CloseContextThatNeverEndsIsClose: with a context that never
// ends (one without a Done channel, or one never cancelled), CloseContext
// waits for the whole close and returns what Close returns, here the
// failed final fsync's error; later calls of either return that same
// result, and the engine takes no more calls.
func TestEngine_CloseContextThatNeverEndsIsClose(t *testing.T) {
	ctxs := map[string]func() context.Context{
		"background": context.Background,
		"cancelable": func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			return ctx
		},
	}
	for name, newCtx := range ctxs {
		t.Run(name, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, "memory", nil)
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a")})
			require.NoError(t, err)
			r.FS.FailSyncs(1) // the final fsync

			err = e.CloseContext(newCtx())
			require.ErrorIs(t, err, faultstore.ErrInjected, "the close's result")
			require.NotErrorIs(t, err, equeue.ErrCloseAbandoned)
			assert.Equal(t, err, e.Close(), "Close returns the same result")
			assert.Equal(t, err, e.CloseContext(newCtx()), "and so does CloseContext again")
			_, err = e.Route(ctx, "t")
			assert.ErrorIs(t, err, equeue.ErrClosed)
		})
	}
	assert.ErrorIs(t, (*equeue.Engine)(nil).CloseContext(context.Background()), equeue.ErrInvalidArgument)
}

// closePanics is a store whose Close panics (a store of the program's own
// with a bug): the engine's close does not finish.
type closePanics struct{ equeue.Store }

func (closePanics) Close() error { panic("the store's Close panicked") }

// TestEngine_CloseThatPanicsIsNotReportedDone: the store's Close panics
// during Engine.Close. The panic reaches Close's caller, and a later Close
// or CloseContext does not return nil, as if the store had been synced and
// closed: it returns an error matching ErrCloseUnfinished, saying the close
// stopped before it finished (found by review: the close was marked done
// whatever happened, with no error, so later calls reported a clean close;
// then, that error matched no exported sentinel).
func TestEngine_CloseThatPanicsIsNotReportedDone(t *testing.T) {
	ctx := ctxT(t)
	e, err := equeue.Open("", &equeue.Options{Store: closePanics{store.NewMemory()}})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a")})
	require.NoError(t, err)

	require.PanicsWithValue(t, "the store's Close panicked", func() { _ = e.Close() })
	err = e.Close()
	require.ErrorIs(t, err, equeue.ErrCloseUnfinished, "the store was never closed: no clean close to report")
	assert.Contains(t, err.Error(), "stopped before it finished")
	assert.Equal(t, err, e.CloseContext(ctx), "CloseContext returns the same result")
	_, err = e.Route(ctx, "t")
	assert.ErrorIs(t, err, equeue.ErrClosed)
}
