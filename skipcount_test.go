package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// Listing dead letters (the console's page, the CLI's dlq list) reads past
// the expired ones every time; it does not count them in
// Stats().ExpiredMessages, which counts what groups skipped.
func TestStats_ListingExpiredDeadLettersCountsNothing(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	for _, body := range []string{"expired", "live"} {
		msg := &equeue.Message{Body: []byte(body)}
		if body == "expired" {
			msg.ExpiresAt = time.Now().Add(-time.Second)
		}
		msg.SetSysProperties(map[string]string{equeue.SysOriginTopic: "t", equeue.SysOriginQueue: "0", equeue.SysOriginOffset: "0"})
		_, err := equeue.AppendInternal(ctx, e, &equeue.AppendRequest{Topic: equeue.DLQTopic("g"), Messages: []*equeue.Message{msg}})
		require.NoError(t, err)
	}
	for range 2 {
		dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 10})
		require.NoError(t, err)
		require.Len(t, dls, 1, "the live dead letter is listed")
		assert.Equal(t, "live", string(dls[0].Message.Body))
	}
	assert.Zero(t, e.Stats().ExpiredMessages, "a listing counts no expired message")
}

// A pull without a group (a browse: the console, the CLI's peek or consume
// --no-group) reports the expired messages it skipped but does not count
// them; a group's pull does.
func TestStats_OnlyGroupPullsCountExpiredMessages(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("old"), ExpiresAt: time.Now().Add(-time.Second)}, {Body: []byte("fresh")}}})
	require.NoError(t, err)
	for range 3 {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t"})
		require.NoError(t, err)
		require.Len(t, res.Messages, 1)
		assert.Equal(t, 1, res.Expired, "the browse reports it")
	}
	assert.Zero(t, e.Stats().ExpiredMessages, "browses count nothing")

	_, res := joinAndPull(t, e, "g", "m", "t")
	require.Len(t, res.Messages, 1)
	assert.Equal(t, 1, res.Expired)
	assert.Equal(t, uint64(1), e.Stats().ExpiredMessages, "the group's pull counts it")
}

// A corrupt record is counted once in Stats().CorruptRecords, however
// many reads pass it: browses, and each group's pulls.
func TestStats_CorruptRecordCountedOnce(t *testing.T) {
	ctx := ctxT(t)
	cs := &countingStore{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: cs})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	sendN(t, p, "t", 6, nil)
	flip := func(_ store.QueueID, off uint64, v []byte) []byte {
		if off != 1 && off != 2 && off != 4 {
			return v
		}
		v = append([]byte(nil), v...) // the store's own bytes stay intact
		v[len(v)-1] ^= 0x40
		return v
	}
	cs.corrupt.Store(&flip)
	for range 2 {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 100})
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 2, 4}, res.Corrupt)
		res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 3, Max: 100})
		require.NoError(t, err)
		assert.Equal(t, []int64{4}, res.Corrupt)
	}
	for _, g := range []string{"g1", "g2"} {
		_, res := joinAndPull(t, e, g, "m", "t")
		assert.Equal(t, []int64{1, 2, 4}, res.Corrupt)
	}
	assert.Equal(t, uint64(3), e.Stats().CorruptRecords, "each corrupt record counted once")
}
