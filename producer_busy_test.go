package equeue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// busyBroker refuses the first busy appends with ErrBusy, as a server over
// its in-flight bound does (before running them).
type busyBroker struct {
	*equeue.Engine
	busy  atomic.Int32
	calls atomic.Int32
}

func (b *busyBroker) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	b.calls.Add(1)
	if b.busy.Add(-1) >= 0 {
		return equeue.AppendResult{}, fmt.Errorf("somewhere: %w", equeue.ErrBusy)
	}
	return b.Engine.Append(ctx, req)
}

// Scenario 7: a producer backs off and retries ErrBusy instead of failing.
func TestProducer_RetriesBusy(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &busyBroker{Engine: e}
	p := newProducer(t, b, nil)
	b.busy.Store(3)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("a")})
	require.NoError(t, err)
	assert.Equal(t, int32(4), b.calls.Load(), "three refusals, then stored")
	b.busy.Store(2)
	_, err = p.SendBatch(ctx, []*equeue.Message{{Topic: "t", Body: []byte("b")}, {Topic: "t", Body: []byte("c")}})
	require.NoError(t, err)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(3), info.Queues[0].MaxOffset, "each message stored once")

	// A context that ends while the broker stays busy returns ErrBusy.
	b.busy.Store(1 << 30)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = p.Send(short, &equeue.Message{Topic: "t", Body: []byte("d")})
	assert.ErrorIs(t, err, equeue.ErrBusy)
}

// A broker that embeds the engine and overrides Append inherits the
// engine's AppendAsync too; SendAsync must still go through the override
// (here: the busy refusals and their retries), not around it. It did go
// around it while SendAsync took any AppendAsync it found.
func TestProducer_SendAsyncUsesAWrappersOwnAppend(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &busyBroker{Engine: e}
	require.False(t, equeue.OwnsFastPaths(b), "the wrapper inherits the engine's answer")
	require.True(t, equeue.OwnsFastPaths(e))
	p := newProducer(t, b, nil)
	b.busy.Store(2)
	res, err := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("a")}).Result(ctx)
	require.NoError(t, err)
	assert.Equal(t, int32(3), b.calls.Load(), "two refusals by the wrapper's Append, then stored through it")
	assert.Equal(t, int64(0), res.Offset)
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Queues[0].MaxOffset, "stored once")
}

// A producer refuses the engine's internal topics up front.
func TestProducer_RefusesInternalTopics(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	p := newProducer(t, e, nil)
	for _, topic := range []string{equeue.RetryTopic("g"), equeue.DLQTopic("g")} {
		_, err := p.Send(ctx, &equeue.Message{Topic: topic, Body: []byte("x")})
		assert.ErrorIs(t, err, equeue.ErrInternalTopic, topic)
	}
	ts, err := e.Topics(ctx)
	require.NoError(t, err)
	assert.Empty(t, ts)
}
