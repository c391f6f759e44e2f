package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

func TestDelayed_CountsPendingAndListsSoonestFirst(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, e, nil)
	base := time.Now().Add(time.Hour).Truncate(time.Second)
	for i := 3; i >= 1; i-- {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"k"}, Body: []byte("x"), DeliverAt: base.Add(time.Duration(i) * time.Minute)})
		require.NoError(t, err)
	}
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("now")})
	require.NoError(t, err)

	info, err := e.Delayed(ctx, 2)
	require.NoError(t, err)
	assert.Equal(t, 3, info.Pending)
	assert.True(t, info.Complete)
	require.Len(t, info.Next, 2)
	assert.True(t, info.Next[0].DeliverAt.Equal(base.Add(time.Minute)), "soonest first: %v", info.Next[0].DeliverAt)
	assert.True(t, info.Next[1].DeliverAt.Equal(base.Add(2*time.Minute)))
	assert.Equal(t, "t", info.Next[0].Topic)

	_, err = e.Delayed(ctx, 5000)
	assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
}
