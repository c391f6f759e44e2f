package equeue_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// Concurrent senders (Append, SendAsync, SendBatch) to three topics (one with a dedup window, one with a
// MaxMessages limit that rejects, one plain) while the store fails the
// writes that carry a poisoned message: every send is answered either
// stored or not stored (the store's error, never ErrIndeterminate), a
// refused dedup ID is not remembered, the refused sends take no room
// under the limit, and after a reopen each topic holds exactly what was
// answered stored, densely.
func TestHuntStore_FailedWritesAmongConcurrentTopics(t *testing.T) {
	r := newFaultRig(t, "badger", nil)
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	require.NoError(t, r.E.CreateTopicWith(ctxBG, "l", equeue.TopicOptions{Queues: 1,
		Limits: equeue.TopicLimits{MaxMessages: 6, Overflow: equeue.OverflowReject}}))
	require.NoError(t, r.E.CreateTopic(ctxBG, "p", 1))
	var poisoned atomic.Int32
	r.FS.OnWrite(func(b *store.Batch) error {
		if slices.ContainsFunc(b.Entries, func(e store.Entry) bool { return bytes.Contains(e.Value, []byte("POISON")) }) &&
			poisoned.Add(1) <= 4 {
			return faultstore.ErrInjected
		}
		return nil
	})

	var (
		mu     sync.Mutex
		stored = map[string][]string{} // topic: bodies answered stored
		failed []string                // dedup IDs answered not stored
	)
	p, err := equeue.NewProducer(r.E, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	// send sends body through Append, a Producer's SendAsync, or (how 2)
	// its SendBatch with a second message body+"+".
	send := func(how int, topic, body string) {
		ms := []*equeue.Message{{Topic: topic, Body: []byte(body)}}
		if how == 2 {
			ms = append(ms, &equeue.Message{Topic: topic, Body: []byte(body + "+")})
		}
		for _, m := range ms {
			if topic == "d" {
				m.ID = string(m.Body)
			}
		}
		var (
			dup bool
			err error
		)
		switch how {
		case 1:
			var res equeue.SendResult
			res, err = p.SendAsync(ctxBG, ms[0]).Result(ctxBG)
			dup = res.Duplicate
		case 2:
			var res equeue.BatchResult
			res, err = p.SendBatch(ctxBG, ms)
			dup = res.Duplicate
		default:
			var res equeue.AppendResult
			res, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: topic, Messages: ms})
			dup = res.Duplicate
		}
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			assert.False(t, dup, "%s: every ID is sent once", body)
			for _, m := range ms {
				stored[topic] = append(stored[topic], string(m.Body))
			}
		case errors.Is(err, faultstore.ErrInjected):
			assert.NotErrorIs(t, err, equeue.ErrIndeterminate, body)
			if topic == "d" {
				failed = append(failed, body)
			}
		case topic == "l" && errors.Is(err, equeue.ErrTopicFull):
		default:
			t.Errorf("%s: unexpected error: %v", body, err)
		}
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 12 {
				topic := []string{"d", "l", "p"}[(g+i)%3]
				body := fmt.Sprintf("%s-%d-%d", topic, g, i)
				if topic == "p" && i%2 == 0 {
					body = "POISON-" + body
				}
				send(g%3, topic, body)
			}
		})
	}
	wg.Wait()
	require.NotZero(t, poisoned.Load(), "some writes failed")

	for _, id := range failed { // not remembered: stored now, not duplicates
		send(0, "d", id)
	}
	for i := 0; i < 10; i++ { // fill l up to its limit
		send(0, "l", fmt.Sprintf("l-fill-%d", i))
	}
	check := func() {
		for _, topic := range []string{"d", "l", "p"} {
			assert.ElementsMatch(t, stored[topic], queueBodies(t, r.E, topic, 0), topic)
		}
		assert.Len(t, stored["l"], 6, "the refused sends took no room under the limit")
	}
	check()
	r.reopen()
	check()
}
