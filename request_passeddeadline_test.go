package equeue_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// passedDeadline is a context whose deadline has passed while its timer
// has not fired yet: Err is still nil. A real deadline is so for a moment,
// and a call that looks at the deadline itself (gRPC sends what is left
// of it) fails with context.DeadlineExceeded in that moment.
type passedDeadline struct{ context.Context }

func (passedDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestRequest_PassedDeadlineIsATimeout: a request whose deadline has
// passed, its context's timer not fired yet, is a request that timed out:
// over remote, where the broker answers the reply topic's making
// DeadlineExceeded, its error matched neither ErrRequestTimeout nor
// ErrRequestNotStored, though nothing was stored. In-process, where
// nothing looks at the deadline before the context ends, the request is
// stored and times out waiting for its reply.
func TestRequest_PassedDeadlineIsATimeout(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		e, b := openOver(t, tr, "memory", nil)
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
		p := newProducer(t, b, nil)
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		_, err := p.Request(passedDeadline{rctx}, &equeue.Message{Topic: "rpc", Body: []byte("late")})
		require.ErrorIs(t, err, equeue.ErrRequestTimeout)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		info, ierr := e.Topic(ctx, "rpc")
		require.NoError(t, ierr)
		if errors.Is(err, equeue.ErrRequestNotStored) {
			assert.Zero(t, info.Messages, "the request said not stored: %v", err)
		} else if !errors.Is(err, equeue.ErrIndeterminate) {
			assert.Equal(t, int64(1), info.Messages, "the request said stored: %v", err)
		}
	})
}
