package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// SendAsync through a broker without fast paths (here a wrapper of the
// engine) asks the selector once per message, as Send does: keyless
// messages go round robin over every queue. It asked twice, so with an
// even queue count every other queue got nothing.
func TestProducer_SendAsyncWithoutFastPathsRoundRobins(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := &busyBroker{Engine: e}
	require.False(t, equeue.OwnsFastPaths(b))
	p := newProducer(t, b, nil)
	counts := map[int]int{}
	for range 4 {
		res, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")}).Result(ctx)
		require.NoError(t, err)
		counts[res.Queue]++
	}
	assert.Equal(t, map[int]int{0: 2, 1: 2}, counts, "messages per queue")
}
