package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// openWithNewerRecord opens an engine whose topic "t" holds "before", a
// record of a newer format version and "after", at offsets 0, 1 and 2.
func openWithNewerRecord(t *testing.T) *equeue.Engine {
	t.Helper()
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	fs.OnWrite(faultstore.NewerFormat)
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("before")}, {Body: faultstore.NewerFormatBody}, {Body: []byte("after")},
	}})
	require.NoError(t, err)
	return e
}

// TestPull_RecordOfANewerFormatIsRefusedNotSkipped: a record of a format
// version this build does not know (written by a newer engine, read after a
// downgrade) is not skipped as corrupt: a pull returns the messages before
// it and stops there, and a pull from its offset fails with
// ErrUnsupportedFormat naming the version and the offset, so a consumer
// group never commits past it; the same through PullStored. Each refusal
// is counted (Stats().UnsupportedFormatPulls), nothing as corrupt.
func TestPull_RecordOfANewerFormatIsRefusedNotSkipped(t *testing.T) {
	e := openWithNewerRecord(t)
	ctx := ctxT(t)
	pulls := map[string]func(req *equeue.PullRequest) (equeue.PullResult, error){
		"Pull": func(req *equeue.PullRequest) (equeue.PullResult, error) { return e.Pull(ctx, req) },
		"PullStored": func(req *equeue.PullRequest) (equeue.PullResult, error) {
			res, stored, err := e.PullStored(ctx, req)
			if stored != nil {
				for i := range stored.Len() {
					res.Messages = append(res.Messages, &equeue.Message{Offset: stored.Offset(i)})
				}
			}
			return res, err
		},
	}
	for name, pull := range pulls {
		t.Run(name, func(t *testing.T) {
			res, err := pull(&equeue.PullRequest{Topic: "t", Max: 10})
			require.NoError(t, err)
			require.Len(t, res.Messages, 1, "only the message before it")
			assert.Equal(t, int64(0), res.Messages[0].Offset)
			assert.Equal(t, int64(1), res.NextOffset, "the pull stops at the record")
			assert.Empty(t, res.Corrupt, "not skipped as corrupt")

			_, err = pull(&equeue.PullRequest{Topic: "t", Offset: 1, Max: 10})
			require.ErrorIs(t, err, equeue.ErrUnsupportedFormat)
			assert.Contains(t, err.Error(), "version 3")
			assert.Contains(t, err.Error(), "t/0 at 1")

			// A filter that nothing before it matches: the pull moves up
			// to the record, not past it.
			res, err = pull(&equeue.PullRequest{Topic: "t", Max: 10, Filter: "A"})
			require.NoError(t, err)
			assert.Equal(t, equeue.PullNoMatch, res.Status)
			assert.Equal(t, int64(1), res.NextOffset)
		})
	}
	assert.Zero(t, e.Stats().CorruptRecords, "nothing was skipped")
	assert.Equal(t, uint64(2), e.Stats().UnsupportedFormatPulls, "each refused pull is counted")
}

// TestPullConsumer_StopsAtARecordOfANewerFormat: a group's consumer that
// commits what it fetched commits up to a record of a newer format
// version, never past it: its fetches from there fail with
// ErrUnsupportedFormat until an engine that reads the record serves them.
func TestPullConsumer_StopsAtARecordOfANewerFormat(t *testing.T) {
	ctx := ctxT(t)
	e := openWithNewerRecord(t)
	pc, err := equeue.NewPullConsumer(e, equeue.PullConsumerOptions{Group: "g", ID: "p1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer func() { require.NoError(t, pc.Close()) }()
	q := equeue.QueueRef{Topic: "t"}
	var got []string
	var fetchErr error
	for range 3 {
		msgs, err := pc.Fetch(ctx, q, 10, 0)
		if err != nil {
			fetchErr = err
			break
		}
		for _, m := range msgs {
			got = append(got, string(m.Body))
		}
		pos, ok := pc.Position(q)
		require.True(t, ok)
		require.NoError(t, pc.Commit(ctx, q, pos))
	}
	assert.Equal(t, []string{"before"}, got)
	require.ErrorIs(t, fetchErr, equeue.ErrUnsupportedFormat)
	gi, err := e.Group(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(1), gi.Queues[0].Committed, "the group's commit stops at the record")
}

// TestRetention_KeepsARecordOfANewerFormat: a retention pass cannot tell
// the age of a record of a format version this build does not know, so it
// keeps it, and the readable messages after it: it never deletes messages
// younger than its age limit because such a record lies among them.
func TestRetention_KeepsARecordOfANewerFormat(t *testing.T) {
	ctx := ctxT(t)
	e := openWithNewerRecord(t)
	res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Hour})
	require.NoError(t, err)
	assert.Zero(t, res.Deleted, "every message is younger than an hour")
	info, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(0), info.Queues[0].MinOffset)
	pulled, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, pulled.Messages, 1)
	assert.Equal(t, "before", string(pulled.Messages[0].Body))
}

// TestDelay_RecordOfANewerFormatIsMovedAsItIs: a delayed message whose
// record is of a newer format version is moved into its queue when due as
// it is (not dropped, not counted corrupt), where pulls stop before it as
// before any such record.
func TestDelay_RecordOfANewerFormatIsMovedAsItIs(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	fs.OnWrite(faultstore.NewerFormat)
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	at := time.Now().Add(30 * time.Millisecond)
	res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: faultstore.NewerFormatBody, DeliverAt: at}, {Body: []byte("after"), DeliverAt: at},
	}})
	require.NoError(t, err)
	require.True(t, res.Delayed)
	eventually(t, waitLong, func() bool {
		info, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		return info.Queues[0].MaxOffset == 2
	}, "both moved")
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.ErrorIs(t, err, equeue.ErrUnsupportedFormat, "the newer record is at offset 0")
	pulled, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 1, Max: 10})
	require.NoError(t, err)
	require.Len(t, pulled.Messages, 1)
	assert.Equal(t, "after", string(pulled.Messages[0].Body))
	assert.Zero(t, e.Stats().CorruptRecords)
}
