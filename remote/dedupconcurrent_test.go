package remote_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRemote_SameIDsFromTwoClientsAtOnceAreStoredOnce sends the same
// message IDs from two clients at once, with SendAsync (one pipelined
// stream each) and with Send, to a topic with a dedup window whose queues
// the producers pick apart. Each ID is stored once, and both sends of it
// answer the stored message's queue and offset, exactly one of them not
// as a duplicate.
func TestRemote_SameIDsFromTwoClientsAtOnceAreStoredOnce(t *testing.T) {
	const n = 600
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 4, DedupWindow: time.Hour}))
	s := startServer(t, e, "", nil)
	producers := []*equeue.Producer{newProducer(t, dial(t, s.addr, nil)), newProducer(t, dial(t, s.addr, nil))}
	results := make([][n]equeue.SendResult, 2)
	errs := make([][n]error, 2)
	var wg sync.WaitGroup
	for w, p := range producers {
		wg.Go(func() {
			futures := make([]*equeue.SendFuture, n)
			for i := range n {
				m := &equeue.Message{Topic: "t", ID: fmt.Sprintf("id-%d", i), Body: fmt.Appendf(nil, "m-%d", i)}
				if i%3 == 0 {
					results[w][i], errs[w][i] = p.Send(ctx, m)
					continue
				}
				futures[i] = p.SendAsync(ctx, m)
			}
			for i, f := range futures {
				if f != nil {
					results[w][i], errs[w][i] = f.Result(ctx)
				}
			}
		})
	}
	wg.Wait()
	got := readTopic(t, e, "t")
	for i := range n {
		body := fmt.Sprintf("m-%d", i)
		require.Len(t, got[body], 1, "%s", body)
		m := got[body][0]
		firsts := 0
		for w := range 2 {
			if !assert.NoError(t, errs[w][i], "%s from %d", body, w) {
				continue
			}
			r := results[w][i]
			assert.Equal(t, m.Queue, r.Queue, "%s from %d: queue", body, w)
			assert.Equal(t, m.Offset, r.Offset, "%s from %d: offset", body, w)
			if !r.Duplicate {
				firsts++
			}
		}
		assert.Equal(t, 1, firsts, "%s: sends answered as the first", body)
	}
}
