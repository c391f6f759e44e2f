package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Delivery is at least once: a job delivered again (a failed attempt
// retried, a rebalance) is reported once, and does not take the place of
// a job not delivered yet.
func TestDelayed_RedeliveredJobIsReportedOnce(t *testing.T) {
	ctx := context.Background()
	arr := newArrivals(2, time.Now())
	a := &equeue.Message{ID: "a", Topic: "reminders", Body: []byte("expire the trial")}
	b := &equeue.Message{ID: "b", Topic: "reminders", Body: []byte("remind about the cart")}
	require.NoError(t, arr.handle(ctx, a))
	require.NoError(t, arr.handle(ctx, a)) // a again
	require.NoError(t, arr.handle(ctx, b))

	timeout := time.After(time.Minute)
	first, err := arr.next(timeout)
	require.NoError(t, err)
	second, err := arr.next(timeout)
	require.NoError(t, err)
	assert.Contains(t, first, "expire the trial")
	assert.Contains(t, second, "remind about the cart")
}

// A job that never comes (lost, or failing until it is dead-lettered)
// makes the run give up with an error at its time limit instead of
// waiting for ever.
func TestDelayed_WaitGivesUp(t *testing.T) {
	ctx := context.Background()
	arr := newArrivals(2, time.Now())
	require.NoError(t, arr.handle(ctx, &equeue.Message{ID: "a", Topic: "reminders", Body: []byte("expire the trial")}))
	timeout := time.After(10 * time.Millisecond)
	_, err := arr.next(timeout)
	require.NoError(t, err)
	_, err = arr.next(timeout)
	require.ErrorIs(t, err, errGaveUp)
}
