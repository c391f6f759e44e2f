package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestHunt_DeleteTopicWhileSendingAcrossATransfer deletes a topic and
// makes it again while senders append to it, with the leadership handed
// over between the two: no message acknowledged before the deletion
// began comes back in the new topic, every message acknowledged after it
// was made again (and its send begun after) is in it once, and nothing is
// stored twice.
func TestHunt_DeleteTopicWhileSendingAcrossATransfer(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopic(t, "t", 2)
	ctx := context.Background()

	// phase: 0 before the delete, 1 between delete and create, 2 after create.
	var phase atomic.Int32
	type sendRec struct {
		began   int32
		outcome huntOutcome
	}
	var mu sync.Mutex
	sends := map[string]sendRec{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for s := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := fmt.Sprintf("s%d-%d", s, i)
				began := phase.Load()
				var err error
				n := c.waitLeader()
				_, err = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: s, Messages: []*equeue.Message{{Body: []byte(v)}}})
				var o huntOutcome
				switch {
				case errors.Is(err, equeue.ErrTopicNotFound), errors.Is(err, equeue.ErrQueueNotFound):
					o = huntNotStored
				default:
					o = classify(t, v, err)
				}
				mu.Lock()
				sends[v] = sendRec{began, o}
				mu.Unlock()
				if err != nil {
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	acked := func(n int) {
		eventually(t, 20*time.Second, func() error {
			mu.Lock()
			defer mu.Unlock()
			k := 0
			for _, r := range sends {
				if r.began == phase.Load() && r.outcome == huntStored {
					k++
				}
			}
			if k < n {
				return fmt.Errorf("%d of %d sends acknowledged in phase %d", k, n, phase.Load())
			}
			return nil
		})
	}
	acked(20)
	phase.Store(1)
	c.onLeader(t, "delete t", func(e *equeue.Engine) error { return e.DeleteTopic(ctx, "t") },
		func(failed *equeue.Engine) bool { return !c.topicExists(t, failed, "t") })
	c.handOver(t, (c.leaderIndex()+1)%3)
	c.createTopic(t, "t", 2)
	phase.Store(2)
	acked(20)
	c.handOver(t, (c.leaderIndex()+1)%3)
	acked(40)
	close(stop)
	wg.Wait()

	c.waitConverged()
	for i, n := range c.nodes {
		if n != nil {
			c.stop(i)
		}
	}
	for i := range c.nodes {
		count := map[string]int{}
		for _, bodies := range readAll(t, c.dirs[i], "t") {
			for _, b := range bodies {
				count[b]++
			}
		}
		for v, r := range sends {
			switch {
			case r.began == 0 && r.outcome == huntStored:
				assert.Zero(t, count[v], "%s: %s acknowledged before the delete, in the new topic", c.id(i), v)
			case r.began == 2 && r.outcome == huntStored:
				assert.Equal(t, 1, count[v], "%s: %s acknowledged into the new topic", c.id(i), v)
			case r.outcome == huntNotStored:
				assert.Zero(t, count[v], "%s: %s refused, stored", c.id(i), v)
			}
		}
		for v, k := range count {
			_, ok := sends[v]
			require.True(t, ok, "%s never sent", v)
			assert.LessOrEqual(t, k, 1, "%s: %s stored %d times", c.id(i), v, k)
		}
	}
}
