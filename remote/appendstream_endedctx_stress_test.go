package remote_test

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

// TestAppend_EndingContextsNeverLoseTrackOfASentAppend: many appends, with
// Append and AppendAsync, whose contexts end at any point of their way
// (before the call, waiting for a window slot or the stream, in flight).
// One answered with an error other than equeue.ErrIndeterminate (the
// context's, say: never sent) is not stored; one acknowledged is.
func TestAppend_EndingContextsNeverLoseTrackOfASentAppend(t *testing.T) {
	e, c := setup(t, nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var mu sync.Mutex
	outcome := map[string]error{}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Go(func() {
			for i := range 100 {
				body := fmt.Sprintf("%d-%d", w, i)
				req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte(body)}}}
				actx, cancel := context.WithTimeout(ctx, time.Duration(rand.IntN(400))*time.Microsecond)
				var err error
				if i%2 == 0 {
					_, err = c.Append(actx, req)
				} else {
					done := make(chan struct{})
					c.AppendAsync(actx, req, func(_ equeue.AppendResult, e error) { err = e; close(done) })
					<-done
				}
				cancel()
				mu.Lock()
				outcome[body] = err
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	stored := map[string]bool{}
	for off := int64(0); ; {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 1024})
		require.NoError(t, err)
		if len(res.Messages) == 0 {
			break
		}
		for _, m := range res.Messages {
			stored[string(m.Body)] = true
		}
		off = res.NextOffset
	}
	counts := map[string]int{}
	for body, err := range outcome {
		switch {
		case err == nil:
			counts["acknowledged"]++
			assert.True(t, stored[body], "append %s acknowledged, not stored", body)
		case errors.Is(err, equeue.ErrIndeterminate):
			counts["unknown"]++
		default:
			counts["refused"]++
			assert.False(t, stored[body], "append %s stored, though it was answered %v", body, err)
		}
	}
	t.Logf("outcomes %v, %d stored", counts, len(stored))
}
