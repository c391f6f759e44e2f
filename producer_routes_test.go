package equeue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestProducer_RoutesOfDeletedTopicsAreForgotten: a producer caches each
// topic's route for RouteTTL. It kept the entry of every topic it ever
// sent to, expired or not, for as long as it lived: one that lives for
// months and sends to topics made and deleted on the way (per job, per
// tenant) grew without bound. Expired routes are now dropped as new
// topics come.
func TestProducer_RoutesOfDeletedTopicsAreForgotten(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	// Every route has expired by the next send.
	p, err := equeue.NewProducer(e, &equeue.ProducerOptions{RouteTTL: time.Nanosecond})
	require.NoError(t, err)
	defer p.Close()
	const topics = 500
	for i := range topics {
		name := fmt.Sprintf("job-%d", i)
		require.NoError(t, e.CreateTopic(ctx, name, 2))
		_, err := p.Send(ctx, &equeue.Message{Topic: name, Body: []byte("x")})
		require.NoError(t, err)
		require.NoError(t, e.DeleteTopic(ctx, name))
	}
	require.LessOrEqual(t, equeue.ProducerRoutes(p), equeue.RouteSweepMin, "routes kept of deleted topics")
}
