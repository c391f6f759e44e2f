package equeue_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRequest_NotStoredUnderRacingDeadlinesIsNeverStored: many requests,
// nobody answering, with deadlines that end at any point of their way (in
// the reply topic's making, the send, or the wait for the reply). Whatever
// a request's error says, one that matches ErrRequestNotStored is not in
// the topic: in-process and over remote alike.
func TestRequest_NotStoredUnderRacingDeadlinesIsNeverStored(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		e, b := openOver(t, tr, "memory", nil)
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
		p := newProducer(t, b, nil)
		var mu sync.Mutex
		notStored := map[string]bool{}
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := range 60 {
					body := fmt.Sprintf("%d-%d", w, i)
					rctx, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(3000))*time.Microsecond)
					_, err := p.Request(rctx, &equeue.Message{Topic: "rpc", Body: []byte(body)})
					cancel()
					if !assert.ErrorIs(t, err, equeue.ErrRequestTimeout) {
						return
					}
					if errors.Is(err, equeue.ErrRequestNotStored) {
						mu.Lock()
						notStored[body] = true
						mu.Unlock()
					}
				}
			})
		}
		wg.Wait()
		stored := 0
		for off := int64(0); ; {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "rpc", Offset: off, Max: 1024})
			require.NoError(t, err)
			if len(res.Messages) == 0 {
				break
			}
			for _, m := range res.Messages {
				stored++
				assert.False(t, notStored[string(m.Body)], "request %s is stored, though its error said it was not", m.Body)
			}
			off = res.NextOffset
		}
		t.Logf("%s: %d stored, %d said not stored", tr, stored, len(notStored))
	})
}
