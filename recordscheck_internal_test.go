package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// flippingStore hands out every record with one bit of its body flipped,
// past the record's checksum: damage only the record's own checksum can
// tell. It does not pass RecordsChecked on.
type flippingStore struct{ Store }

func (s flippingStore) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	recs, err := s.Store.Read(q, from, to, max, maxBytes)
	for i := range recs {
		if v := recs[i].Value; len(v) > 0 {
			v = append([]byte(nil), v...)
			v[len(v)-1] ^= 0x40
			recs[i].Value = v
		}
	}
	return recs, err
}

// TestPull_RecordsAreCheckedUnlessTheStoreChecksThem: the Badger store
// checks each segment's checksum, which covers its records whole, so
// pulls do not check each record's again; a store that does not say so
// (here one that damages what it reads) has every record checked, and a
// damaged one is reported corrupt, not delivered.
func TestPull_RecordsAreCheckedUnlessTheStoreChecksThem(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	b, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	e, err := Open("", &Options{Store: b})
	require.NoError(t, err)
	assert.True(t, e.recordsChecked, "Badger checks its segments")
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &AppendRequest{Topic: "t", Messages: []*Message{{Body: []byte("first")}, {Body: []byte("second")}}})
	require.NoError(t, err)
	res, err := e.Pull(ctx, &PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 2)
	assert.Equal(t, "second", string(res.Messages[1].Body))
	require.NoError(t, e.Close()) // closes b

	b, err = store.OpenBadger(dir, nil)
	require.NoError(t, err)
	e, err = Open("", &Options{Store: flippingStore{b}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	assert.False(t, e.recordsChecked, "a wrapper that does not say it checks")
	res, err = e.Pull(ctx, &PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	assert.Empty(t, res.Messages, "damaged records are not delivered")
	assert.Equal(t, []int64{0, 1}, res.Corrupt)

	m, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()
	assert.False(t, m.recordsChecked, "the memory store keeps records as given")
}
