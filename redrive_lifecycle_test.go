package equeue_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Redrive answers bad input and a closed engine with their documented
// errors, as every other entry point does: a nil context panicked, and
// after Close it answered as if the engine were open.
func TestRedrive_NilContextAndClosedEngine(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	var nilCtx context.Context
	var err error
	require.NotPanics(t, func() { _, err = e.Redrive(nilCtx, "g", equeue.RedriveRequest{All: true}) })
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)

	require.NoError(t, e.Close())
	_, err = e.Redrive(ctxBG, "g", equeue.RedriveRequest{All: true})
	assert.ErrorIs(t, err, equeue.ErrClosed)
}
