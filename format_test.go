package equeue_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestFormat_ReadsStoreWrittenByVersion1 opens a Badger store written by the
// engine before the compact record format (testdata/store-v1: a topic
// "orders" with one queue and three messages, what each Send returned in
// testdata/store-v1.json) and reads every message back, then appends in the
// new format to the same queue and reads old and new records together.
func TestFormat_ReadsStoreWrittenByVersion1(t *testing.T) {
	dir := t.TempDir()
	entries, err := os.ReadDir("testdata/store-v1")
	require.NoError(t, err)
	for _, f := range entries {
		b, err := os.ReadFile(filepath.Join("testdata/store-v1", f.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f.Name()), b, 0o600))
	}
	raw, err := os.ReadFile("testdata/store-v1.json")
	require.NoError(t, err)
	var sent []struct {
		ID       string `json:"id"`
		Offset   int64  `json:"offset"`
		StoredAt int64  `json:"stored_at"`
	}
	require.NoError(t, json.Unmarshal(raw, &sent))
	require.Len(t, sent, 3)

	ctx := ctxT(t)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "orders", Queue: 0, Offset: 0, Max: 10})
	require.NoError(t, err)
	require.Empty(t, res.Corrupt)
	require.Len(t, res.Messages, 3)
	for i, m := range res.Messages {
		assert.Equal(t, sent[i].ID, m.ID, "message %d", i)
		assert.Equal(t, sent[i].Offset, m.Offset, "message %d", i)
		assert.Equal(t, sent[i].StoredAt, m.StoredAt.UnixNano(), "message %d", i)
	}
	assert.Equal(t, "first, engine ID", string(res.Messages[0].Body))
	second := res.Messages[1]
	assert.Equal(t, "second, every field", string(second.Body))
	assert.Equal(t, "paid", second.Tag)
	assert.Equal(t, []string{"k1", "k2"}, second.Keys)
	assert.Equal(t, map[string]string{"p": "v"}, second.Properties)
	assert.Equal(t, time.Unix(1700000000, 123).UnixNano(), second.BornAt.UnixNano())
	assert.Equal(t, time.Unix(9000000000, 0).UnixNano(), second.ExpiresAt.UnixNano())
	assert.Equal(t, "third, producer ID", string(res.Messages[2].Body))

	p := newProducer(t, e, nil)
	r, err := p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("fourth, new format")})
	require.NoError(t, err)
	assert.Equal(t, int64(3), r.Offset)
	res, err = e.Pull(ctx, &equeue.PullRequest{Topic: "orders", Queue: 0, Offset: 0, Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 4)
	assert.Equal(t, sent[2].ID, res.Messages[2].ID)
	assert.Equal(t, r.ID, res.Messages[3].ID)
	assert.Equal(t, "fourth, new format", string(res.Messages[3].Body))
}

// TestFormat_GeneratedIDsAndTimesReadBack sends messages without an ID
// (whose ID the record keeps as 4 bytes), with a producer ID of the same
// shape, and with born-at, delay and TTL set, on every store, and checks
// that each reads back with the ID Send returned and the times it was
// stored with, also after a reopen.
func TestFormat_GeneratedIDsAndTimesReadBack(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, reopen := openEngine(t, kind, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			p := newProducer(t, e, nil)
			born := time.Unix(1_600_000_000, 42)
			msgs := []*equeue.Message{
				{Topic: "t", Body: []byte("a")},
				{Topic: "t", Body: []byte("b")},
				{Topic: "t", ID: "0123456789abcdef01234567", Body: []byte("c")},
				{Topic: "t", ID: "0123456789ABCDEF01234567", Body: []byte("d"), BornAt: born, TTL: time.Hour, Attempt: 2},
				{Topic: "t"},
			}
			ids := make([]string, len(msgs))
			stored := make([]time.Time, len(msgs))
			before := time.Now()
			for i, m := range msgs {
				r, err := p.Send(ctx, m)
				require.NoError(t, err)
				ids[i], stored[i] = r.ID, r.StoredAt
			}
			assert.NotEqual(t, ids[0], ids[1], "generated IDs are unique")
			assert.Len(t, ids[0], 24)
			check := func(e *equeue.Engine) {
				t.Helper()
				res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0, Max: 10})
				require.NoError(t, err)
				require.Len(t, res.Messages, len(msgs))
				for i, m := range res.Messages {
					assert.Equal(t, ids[i], m.ID, "message %d", i)
					assert.Equal(t, stored[i].UnixNano(), m.StoredAt.UnixNano(), "message %d stored-at", i)
					assert.False(t, m.BornAt.After(m.StoredAt) && msgs[i].BornAt.IsZero(), "message %d born after stored", i)
					assert.Equal(t, string(msgs[i].Body), string(m.Body))
				}
				assert.False(t, res.Messages[0].BornAt.Before(before.Add(-time.Second)), "engine-stamped born-at is the send time")
				d := res.Messages[3]
				assert.Equal(t, born.UnixNano(), d.BornAt.UnixNano())
				assert.Equal(t, 2, d.Attempt)
				assert.False(t, d.ExpiresAt.IsZero())
				assert.Nil(t, res.Messages[4].Body)
			}
			check(e)
			if kind == "badger" {
				check(reopen())
			}
		})
	}
}
