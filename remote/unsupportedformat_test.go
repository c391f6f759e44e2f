package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A record of a format version the server's engine cannot read stops
// remote pulls as it stops in-process ones: a pull returns the messages
// before it and a pull from its offset fails with ErrUnsupportedFormat,
// through a plain pull, a group's long-poll (PullMany) and the read-ahead,
// so a remote group never commits past it.
func TestClient_PullStopsAtARecordOfANewerFormat(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	fs.OnWrite(faultstore.NewerFormat)
	e, c := setup(t, &equeue.Options{Store: fs})
	require.NoError(t, c.CreateTopic(ctx, "t", 1))
	_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("before")}, {Body: faultstore.NewerFormatBody}, {Body: []byte("after")},
	}})
	require.NoError(t, err)

	res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	assert.Equal(t, "before", string(res.Messages[0].Body))
	assert.Equal(t, int64(1), res.NextOffset)
	assert.Empty(t, res.Corrupt)
	_, err = c.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 1, Max: 10})
	require.ErrorIs(t, err, equeue.ErrUnsupportedFormat)

	pc, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "g", ID: "p1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	defer func() { require.NoError(t, pc.Close()) }()
	q := equeue.QueueRef{Topic: "t"}
	var got []string
	var fetchErr error
	for range 3 {
		msgs, err := pc.Fetch(ctx, q, 10, 50*time.Millisecond)
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
	gi, err := c.Group(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(1), gi.Queues[0].Committed, "the group's commit stops at the record")
	assert.Zero(t, e.Stats().CorruptRecords)
	st, err := c.EngineStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, e.Stats().UnsupportedFormatPulls, st.UnsupportedFormatPulls, "the refusals are counted over remote")
	assert.Positive(t, st.UnsupportedFormatPulls)
}
