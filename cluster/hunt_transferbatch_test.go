package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// TestHunt_BatchesAndDelayedSendsAcrossATransfer acknowledges batches and
// delayed batches on a topic with a dedup window just before the
// leadership is handed over: the new leader holds every batch at the
// offsets its send was told, delivers every delayed message once and not
// before its time, and answers the same IDs sent again as duplicates.
func TestHunt_BatchesAndDelayedSendsAcrossATransfer(t *testing.T) {
	c := newCluster(t, 3, nil)
	c.createTopicWith(t, "t", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour})
	li := c.leaderIndex()
	leader := c.nodes[li]
	ctx := context.Background()

	batch := func(prefix string, n int, delay time.Duration) []*equeue.Message {
		msgs := make([]*equeue.Message, n)
		for i := range msgs {
			v := fmt.Sprintf("%s-%d", prefix, i)
			msgs[i] = &equeue.Message{ID: v, Body: []byte(v), Delay: delay}
		}
		return msgs
	}
	type sent struct {
		req *equeue.AppendRequest
		res equeue.AppendResult
	}
	var plain, delayed []sent
	due := time.Now().Add(2 * time.Second)
	for b := range 5 {
		req := &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: batch(fmt.Sprintf("p%d", b), 7, 0)}
		res, err := leader.Append(ctx, req)
		require.NoError(t, err)
		plain = append(plain, sent{req, res})
		req = &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: batch(fmt.Sprintf("d%d", b), 3, time.Until(due))}
		res, err = leader.Append(ctx, req)
		require.NoError(t, err)
		require.True(t, res.Delayed)
		delayed = append(delayed, sent{req, res})
	}
	c.handOver(t, (li+1)%3)

	got := huntPullAll(t, c, "t", 0)
	byOffset := map[int64]string{}
	for _, m := range got {
		byOffset[m.Offset] = string(m.Body)
	}
	for _, s := range plain {
		for i, m := range s.req.Messages {
			assert.Equal(t, string(m.Body), byOffset[s.res.FirstOffset+int64(i)], "acknowledged at %d", s.res.FirstOffset+int64(i))
		}
	}
	assert.Len(t, got, 35)

	var moved []*equeue.Message
	eventually(t, 20*time.Second, func() error {
		moved = huntPullAll(t, c, "t", 1)
		if len(moved) < 15 {
			return fmt.Errorf("%d of 15 delayed messages delivered", len(moved))
		}
		return nil
	})
	seen := map[string]int{}
	for _, m := range moved {
		seen[string(m.Body)]++
		assert.False(t, m.StoredAt.Before(due.Add(-10*time.Millisecond)), "%s delivered at %v, due %v", m.Body, m.StoredAt, due)
	}
	for _, s := range delayed {
		for _, m := range s.req.Messages {
			assert.Equal(t, 1, seen[string(m.Body)], "%s delivered once", m.Body)
		}
	}

	// The same IDs again, on the new leader: duplicates, stored nothing.
	for _, s := range append(plain, delayed...) {
		var res equeue.AppendResult
		c.onServing(t, "send again", func(n *cluster.Node) error {
			var err error
			res, err = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: s.req.Queue, Messages: batch(string(s.req.Messages[0].Body[:2]), len(s.req.Messages), 0)})
			return err
		})
		assert.True(t, res.Duplicate, "%s sent again is a duplicate", s.req.Messages[0].Body)
		if !s.res.Delayed {
			assert.Equal(t, s.res.FirstOffset, res.FirstOffset)
		}
	}
	assert.Len(t, huntPullAll(t, c, "t", 0), 35)
	assert.Len(t, huntPullAll(t, c, "t", 1), 15)
}
