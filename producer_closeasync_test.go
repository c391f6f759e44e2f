package equeue_test

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Close returns after the SendAsync calls pending at that time complete:
// a call that raced Close either is refused with ErrClosed or was waited
// for, so nothing is stored once Close has returned.
func TestProducer_NothingStoredAfterCloseReturns(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for round := range 100 {
		// A bound of its own for each round: the hundred rounds took
		// longer than one ctxT on a loaded machine, and the sends then
		// failed with the context's error instead of ErrClosed.
		ctx := ctxT(t)
		p, err := equeue.NewProducer(e, nil)
		require.NoError(t, err)
		var (
			wg      sync.WaitGroup
			stop    atomic.Bool
			mu      sync.Mutex
			futures []*equeue.SendFuture
			started = make(chan struct{}, 4)
		)
		for range 4 {
			wg.Go(func() {
				started <- struct{}{}
				for !stop.Load() {
					f := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
					mu.Lock()
					futures = append(futures, f)
					mu.Unlock()
				}
			})
		}
		for range 4 {
			<-started
		}
		require.NoError(t, p.Close())
		end := queueEnd(t, e, "t")
		stop.Store(true)
		wg.Wait()
		for _, f := range futures {
			<-f.Done()
		}
		require.Equal(t, end, queueEnd(t, e, "t"), "round %d: stored after Close returned", round)
		for _, f := range futures {
			if _, err := f.Result(ctx); err != nil {
				assert.ErrorIs(t, err, equeue.ErrClosed)
			}
		}
	}
}
