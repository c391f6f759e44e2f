package kafka_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// pullCounter is an engine that counts the pulls made of it and the
// messages they returned, and apart the pulls of one message (a read of
// one offset, as a search by time makes).
type pullCounter struct {
	*equeue.Engine
	pulls, msgs, checks atomic.Int64
}

func (p *pullCounter) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	res, err := p.Engine.Pull(ctx, req)
	if req.Max == 1 {
		p.checks.Add(1)
		return res, err
	}
	p.pulls.Add(1)
	p.msgs.Add(int64(len(res.Messages)))
	return res, err
}

// reset returns the pulls and messages counted and starts again from 0.
func (p *pullCounter) reset() (pulls, msgs int64) {
	p.checks.Store(0)
	return p.pulls.Swap(0), p.msgs.Swap(0)
}

// TestListOffsets_MaxTimestampReadsEachMessageOnce: MAX_TIMESTAMP (-3)
// without LogAppendTime reads a queue's messages to find the largest
// producer timestamp; it reads them once, not on every request (before,
// each request read the whole partition), and one request reads at most
// a bounded time, one pull at least (here one pull, with no time): a
// request that has not read to the end is answered OFFSET_NOT_AVAILABLE
// (retriable), and the next goes on from there. The answer stays the
// first message of the largest timestamp as messages are added.
func TestListOffsets_MaxTimestampReadsEachMessageOnce(t *testing.T) {
	kafka.SetMaxTimestampBudget(t, 0)
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	b := &pullCounter{Engine: e}
	cl := kclient(t, serve(t, b, nil))
	t0 := time.UnixMilli(1_700_000_000_000)
	const n = 5000
	for start := 0; start < n; start += 1000 {
		var msgs []*equeue.Message
		for i := start; i < start+1000; i++ {
			born := t0.Add(time.Duration(i%997) * time.Millisecond)
			if i == 2345 || i == 4000 {
				born = t0.Add(time.Hour)
			}
			msgs = append(msgs, &equeue.Message{Body: []byte("v"), BornAt: born})
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	b.reset()

	var p = listOffset(t, cl, "t", 0, -3)
	var read int64
	for tries := 1; p.ErrorCode == 78; tries++ { // OFFSET_NOT_AVAILABLE: retry
		require.Less(t, tries, 20, "the scan goes on from request to request")
		pulls, msgs := b.reset()
		assert.Equal(t, int64(1), pulls, "pulls of one request")
		read += msgs
		p = listOffset(t, cl, "t", 0, -3)
	}
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(2345), p.Offset, "the first message of the largest timestamp")
	assert.Equal(t, t0.Add(time.Hour).UnixMilli(), p.Timestamp)
	pulls, msgs := b.reset()
	assert.Equal(t, int64(1), pulls, "pulls of one request")
	assert.Equal(t, int64(n), read+msgs, "every message read once")

	again := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), again.ErrorCode)
	assert.Equal(t, p.Offset, again.Offset)
	assert.Equal(t, p.Timestamp, again.Timestamp)
	checks := b.checks.Load()
	_, msgs = b.reset()
	assert.Zero(t, msgs, "a request after the scan reads nothing again")
	assert.Zero(t, checks, "nor the message found: the topic's ID tells a topic made again apart")

	var more []*equeue.Message
	for i := range 10 {
		born := t0
		if i == 5 {
			born = t0.Add(2 * time.Hour)
		}
		more = append(more, &equeue.Message{Body: []byte("v"), BornAt: born})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: more})
	require.NoError(t, err)
	b.reset()
	later := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), later.ErrorCode)
	assert.Equal(t, int64(n+5), later.Offset, "a later, larger timestamp")
	assert.Equal(t, t0.Add(2*time.Hour).UnixMilli(), later.Timestamp)
	_, msgs = b.reset()
	assert.Equal(t, int64(10), msgs, "only the messages added are read")

	// A topic deleted and created again is read anew.
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("v"), BornAt: t0}, {Body: []byte("v"), BornAt: t0.Add(time.Minute)}, {Body: []byte("v"), BornAt: t0},
	}})
	require.NoError(t, err)
	anew := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), anew.ErrorCode)
	assert.Equal(t, int64(1), anew.Offset, "the new topic's largest timestamp")
	assert.Equal(t, t0.Add(time.Minute).UnixMilli(), anew.Timestamp)
}
