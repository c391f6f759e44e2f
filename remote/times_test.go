package remote_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRemote_TimesTheWireCannotCarry: a time outside what Unix nanoseconds
// in an int64 hold would wrap to another date on the wire. The client
// refuses a BornAt or DeliverAt out of range with the engine's errors and
// sends an ExpiresAt after 2262 as "never", as the engine stores it, so a
// "never" expiry is not turned into an expiry in the past.
func TestRemote_TimesTheWireCannotCarry(t *testing.T) {
	year := func(y int) time.Time { return time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC) }
	e, c := setup(t, &equeue.Options{MaxDelay: math.MaxInt64})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, c)
	for _, m := range []struct {
		m    equeue.Message
		want []error
	}{
		{equeue.Message{BornAt: year(1500)}, []error{equeue.ErrInvalidArgument}},
		{equeue.Message{BornAt: year(2300)}, []error{equeue.ErrInvalidArgument}},
		{equeue.Message{DeliverAt: year(3000)}, []error{equeue.ErrInvalidArgument, equeue.ErrInvalidDelay}},
		{equeue.Message{ExpiresAt: year(1500)}, []error{equeue.ErrInvalidArgument}},
		{equeue.Message{Attempt: 1 << 31}, []error{equeue.ErrInvalidArgument}},
	} {
		msg := m.m
		msg.Topic, msg.Body = "t", []byte("refused")
		_, err := p.Send(ctx, &msg)
		for _, want := range m.want {
			assert.ErrorIs(t, err, want, "%+v", m.m)
		}
	}
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, int64(0), info.Queues[0].MaxOffset, "nothing refused was stored")

	r, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("never"), ExpiresAt: year(3000)})
	require.NoError(t, err)
	pr, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: r.Queue, Offset: r.Offset})
	require.NoError(t, err)
	require.Len(t, pr.Messages, 1, "an expiry after 2262 is not in the past")
	assert.True(t, pr.Messages[0].ExpiresAt.IsZero())
	assert.Zero(t, pr.Expired)
	assert.Zero(t, e.Stats().ExpiredMessages)
}
