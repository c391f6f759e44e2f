package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

func sendN(t testing.TB, p *equeue.Producer, topic string, n int, tag func(i int) string) []equeue.SendResult {
	t.Helper()
	ctx := context.Background()
	out := make([]equeue.SendResult, 0, n)
	for i := range n {
		m := &equeue.Message{Topic: topic, Keys: []string{"k"}, Body: fmt.Appendf(nil, "%d", i)}
		if tag != nil {
			m.Tag = tag(i)
		}
		r, err := p.Send(ctx, m)
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

func TestPull_BatchesAndFilters(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, kind, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			p := newProducer(t, e, nil)
			tags := []string{"A", "B", "C"}
			sendN(t, p, "t", 100, func(i int) string { return tags[i%3] })

			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t"})
			require.NoError(t, err)
			assert.Equal(t, equeue.PullFound, res.Status)
			assert.Len(t, res.Messages, equeue.DefaultPullBatch, "default batch")
			assert.Equal(t, int64(32), res.NextOffset)
			assert.Equal(t, int64(100), res.MaxOffset)

			res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: " A ||C ", Max: 100})
			require.NoError(t, err)
			require.NotEmpty(t, res.Messages)
			for _, m := range res.Messages {
				assert.Contains(t, []string{"A", "C"}, m.Tag)
			}
			assert.Len(t, res.Messages, 67)
			assert.Equal(t, int64(100), res.NextOffset)

			// Only non-matching messages: no messages, but the offset moves on.
			res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Filter: "Z", Max: 10})
			require.NoError(t, err)
			assert.Equal(t, equeue.PullNoMatch, res.Status)
			assert.Empty(t, res.Messages)
			assert.Greater(t, res.NextOffset, int64(0))

			// Offset beyond the end or below the start: offset moved.
			res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 500})
			require.NoError(t, err)
			assert.Equal(t, equeue.PullOffsetMoved, res.Status)
			assert.Equal(t, int64(100), res.NextOffset)
			res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: -5})
			require.NoError(t, err)
			assert.Equal(t, equeue.PullOffsetMoved, res.Status)
			assert.Equal(t, int64(0), res.NextOffset)

			// At the end without waiting.
			res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 100})
			require.NoError(t, err)
			assert.Equal(t, equeue.PullNoNewMessage, res.Status)
		})
	}
}

func TestPull_BadInput(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	cases := map[string]struct {
		req  *equeue.PullRequest
		want error
	}{
		"nil":           {nil, equeue.ErrInvalidArgument},
		"unknown topic": {&equeue.PullRequest{Topic: "nope"}, equeue.ErrTopicNotFound},
		"bad queue":     {&equeue.PullRequest{Topic: "t", Queue: 2}, equeue.ErrQueueNotFound},
		"neg queue":     {&equeue.PullRequest{Topic: "t", Queue: -1}, equeue.ErrQueueNotFound},
		"max too big":   {&equeue.PullRequest{Topic: "t", Max: 5000}, equeue.ErrInvalidArgument},
		"neg max":       {&equeue.PullRequest{Topic: "t", Max: -1}, equeue.ErrInvalidArgument},
		"neg wait":      {&equeue.PullRequest{Topic: "t", Wait: -time.Second}, equeue.ErrInvalidArgument},
		"bad filter":    {&equeue.PullRequest{Topic: "t", Filter: "A ||"}, equeue.ErrInvalidFilter},
		"bad filter 2":  {&equeue.PullRequest{Topic: "t", Filter: "A | B"}, equeue.ErrInvalidFilter},
		"unknown group": {&equeue.PullRequest{Topic: "t", Group: "g", Member: "m"}, equeue.ErrGroupNotFound},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := e.Pull(ctx, c.req)
			assert.ErrorIs(t, err, c.want)
		})
	}
}

// TestPull_LongPollWokenByAppend shows a waiting pull returns as soon as a
// message is appended, long before its wait runs out.
func TestPull_LongPollWokenByAppend(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, kind, &equeue.Options{MaxPullWait: time.Minute})
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			type out struct {
				res equeue.PullResult
				err error
				at  time.Time
			}
			ch := make(chan out, 1)
			go func() {
				res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 1, Wait: 45 * time.Second})
				ch <- out{res, err, time.Now()}
			}()
			// An append to another queue must not wake it with nothing.
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{{Body: []byte("other")}}})
			require.NoError(t, err)
			time.Sleep(50 * time.Millisecond) // give the pull time to start waiting
			sent := time.Now()
			_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: []byte("wake")}}})
			require.NoError(t, err)
			select {
			case o := <-ch:
				require.NoError(t, o.err)
				require.Equal(t, equeue.PullFound, o.res.Status)
				assert.Equal(t, "wake", string(o.res.Messages[0].Body))
				assert.Less(t, o.at.Sub(sent), 40*time.Second, "woken by the append, not by its timeout")
			case <-time.After(40 * time.Second):
				t.Fatal("pull was not woken by the append")
			}
		})
	}
}

func TestPull_WaitEndsOnTimeoutCancelAndClose(t *testing.T) {
	ctx := ctxT(t)
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Wait: 20 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, equeue.PullNoNewMessage, res.Status)

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.Pull(cctx, &equeue.PullRequest{Topic: "t", Wait: time.Minute})
		done <- err
	}()
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)

	go func() {
		_, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Wait: time.Minute})
		done <- err
	}()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, e.Close())
	assert.ErrorIs(t, <-done, equeue.ErrClosed)
}

// TestPull_CorruptRecordSkippedAndReported flips a byte of one stored record:
// the pull reports its offset, never returns it as a message, and the rest of
// the queue stays readable.
func TestPull_CorruptRecordSkippedAndReported(t *testing.T) {
	ctx := ctxT(t)
	cs := &countingStore{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: cs})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	sendN(t, p, "t", 10, nil)
	flip := func(_ store.QueueID, off uint64, v []byte) []byte {
		if off == 4 {
			v[len(v)-1] ^= 0x40
		}
		return v
	}
	cs.corrupt.Store(&flip)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 100})
	require.NoError(t, err)
	assert.Equal(t, []int64{4}, res.Corrupt)
	require.Len(t, res.Messages, 9)
	for _, m := range res.Messages {
		assert.NotEqual(t, int64(4), m.Offset)
	}
	assert.Equal(t, int64(10), res.NextOffset)
	assert.Equal(t, uint64(1), e.Stats().CorruptRecords)
}

func TestPull_ExpiredMessagesSkippedAndCounted(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("old"), ExpiresAt: time.Now().Add(-time.Second)})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("fresh"), ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	_, res := joinAndPull(t, e, "g", "m", "t") // a group's pull: counted (a browse only reports it)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "fresh", string(res.Messages[0].Body))
	assert.Equal(t, 1, res.Expired)
	assert.Equal(t, uint64(1), e.Stats().ExpiredMessages)
}
