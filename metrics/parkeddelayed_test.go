package metrics_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
	"github.com/equeue-go/equeue/store"
)

// keptMemory is a memory store that outlives the engines opened on it.
type keptMemory struct{ *store.Memory }

func (keptMemory) Close() error { return nil }

// smallWrites is a store whose writes hold at most lim.
type smallWrites struct {
	keptMemory
	lim store.Limits
}

func (s smallWrites) Limits() store.Limits { return s.lim }

// TestCollector_ParkedDelayedMessages: a due delayed message that no write
// of the store can hold is stuck until a reopen; the collector exports the
// engine's count of such messages, so they are seen.
func TestCollector_ParkedDelayedMessages(t *testing.T) {
	ctx := ctxT(t)
	mem := keptMemory{store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: mem})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Topic: "t", Body: bytes.Repeat([]byte("b"), 4096), Delay: 100 * time.Millisecond},
	}})
	require.NoError(t, err)
	require.NoError(t, e.Close())

	m := metrics.New()
	e, err = equeue.Open("", &equeue.Options{Store: smallWrites{mem, store.Limits{MaxBytes: 2048}}, Observer: m})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	m.Attach(e)
	reg := prometheus.NewPedanticRegistry()
	require.NoError(t, reg.Register(m))
	require.NotNil(t, find(t, reg, "equeue_delayed_parked_messages", nil), "exported before anything is parked")
	deadline := time.Now().Add(20 * time.Second)
	for value(t, reg, "equeue_delayed_parked_messages", nil) != 1 {
		require.False(t, time.Now().After(deadline), "the message too large to move is not counted")
		time.Sleep(5 * time.Millisecond)
	}
}
