package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestEngine_MaxMessageSizeIsWhatAppendTakes: MaxMessageSize tells the
// limit an append checks: a message of that many bytes encoded would be
// stored, a body of that many alone is refused ErrMessageTooLarge.
func TestEngine_MaxMessageSizeIsWhatAppendTakes(t *testing.T) {
	for _, kind := range storeKinds {
		e, _ := openEngine(t, kind, &equeue.Options{MaxMessageSize: 1 << 16})
		ctx := ctxT(t)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		limit := e.MaxMessageSize()
		assert.Equal(t, 1<<16, limit, kind)
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, limit)}}})
		assert.ErrorIs(t, err, equeue.ErrMessageTooLarge, kind)
		_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, limit-64)}}})
		assert.NoError(t, err, kind)
		ns, err := e.Namespace("ns")
		require.NoError(t, err)
		assert.Equal(t, limit, ns.MaxMessageSize(), kind)
	}
}

// TestEngine_MaxMessageSizeIsTheStoresWhenSmaller: a store whose largest
// value is below Options.MaxMessageSize (a Badger value log of 1 MiB
// holds less than the 4 MiB default) bounds the limit, and MaxMessageSize
// tells that one: a body of the options' limit less framing, which the
// options alone would take, is refused ErrMessageTooLarge.
func TestEngine_MaxMessageSizeIsTheStoresWhenSmaller(t *testing.T) {
	bo := store.DefaultBadgerOptions()
	bo.ValueLogFileSize = 1 << 20
	e, _ := openEngine(t, "badger", &equeue.Options{Badger: &bo})
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	limit := e.MaxMessageSize()
	assert.Less(t, limit, 1<<20, "the value log bounds the limit")
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, limit)}}})
	assert.ErrorIs(t, err, equeue.ErrMessageTooLarge)
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, limit-64)}}})
	assert.NoError(t, err)
}
