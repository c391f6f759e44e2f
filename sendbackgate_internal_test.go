package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holdSendBackGate holds g's send-back gate shared, as a SendBack does
// until its write is queued, and returns its release.
func holdSendBackGate(g *group) func() {
	if err := g.sbGate.lock(context.Background(), true, nil); err != nil {
		panic(err) // a background context never ends
	}
	return func() { g.sbGate.unlock(true) }
}

// within returns f's error, failing the test when f has not returned
// after a bound far past any wait but a hang.
func within(t *testing.T, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return")
		return nil
	}
}

// A fence of a group's send-backs (a reset, a commit moving back, the
// group's deletion) waiting for its gate, which a SendBack holds, returns
// its context's error once that context ends, holding nothing: a later
// SendBack and a later fence have the gate.
func TestFenceSendBacks_HonoursItsContextWhileTheGateIsHeld(t *testing.T) {
	e, g, grant := markedEngine(t)
	release := holdSendBackGate(g)
	released := false
	defer func() {
		if !released {
			release()
		}
	}()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := within(t, func() error { return e.fenceSendBacks(ctx, g) })
	require.ErrorIs(t, err, context.Canceled)
	release()
	released = true

	_, err = e.SendBack(t.Context(), &SendBackRequest{Group: "g", Member: "m", Grant: grant, DeadLetter: true})
	require.NoError(t, err, "the gate was not left held")
	require.NoError(t, within(t, func() error { return e.fenceSendBacks(t.Context(), g) }), "nor held shared")
	g.sbGate.unlock(false)
	assert.NoError(t, e.ResetOffsets(t.Context(), "g", ResetRequest{To: ResetToEarliest}))
}
