package equeue_test

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// delaySlots returns the delay-log slot of each pending delayed message of
// the engine's store in dir, from its index keys ("d/" | at | slot).
func delaySlots(t *testing.T, dir string) []uint64 {
	t.Helper()
	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	var slots []uint64
	require.NoError(t, st.ScanMeta([]byte("d/"), func(k, _ []byte) error {
		require.Len(t, k, 2+16)
		slots = append(slots, binary.BigEndian.Uint64(k[len(k)-8:]))
		return nil
	}))
	return slots
}

// An index key of a delayed message proves its delay-log slot was given
// out: after damage that took the delay log's tail with the record of a
// pending message, a later delayed message must not get that slot too.
// Sharing it, the earlier message's key would move the later message, at
// the earlier one's time and into the earlier one's queue, and the later
// one's own key would then find nothing to move (found by review: the
// delay log's end came back below the slots the index held).
func TestEngine_DelayLogEndBelowAnIndexKeyReusesNoSlot(t *testing.T) {
	dir := t.TempDir()
	ctx := ctxT(t)
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "a", 1))
	require.NoError(t, e.CreateTopic(ctx, "b", 1))
	res, err := e.Append(ctx, &equeue.AppendRequest{Topic: "a", Messages: []*equeue.Message{{Body: []byte("A"), Delay: time.Hour}}})
	require.NoError(t, err)
	require.True(t, res.Delayed)
	require.NoError(t, e.Close())
	require.Equal(t, []uint64{0}, delaySlots(t, dir))
	loseTail(t, dir, delayLog, 0, 1)

	e, err = equeue.Open(dir, nil)
	require.NoError(t, err, "the engine opens")
	res, err = e.Append(ctx, &equeue.AppendRequest{Topic: "b", Messages: []*equeue.Message{{Body: []byte("B"), Delay: 2 * time.Hour}}})
	require.NoError(t, err)
	require.True(t, res.Delayed)
	info, err := e.Delayed(ctx, 0)
	require.NoError(t, err)
	assert.Equal(t, 2, info.Pending)
	require.NoError(t, e.Close())

	slots := delaySlots(t, dir)
	require.Len(t, slots, 2)
	assert.NotEqual(t, slots[0], slots[1], "each pending message has a slot of its own")
	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, st.Close()) }()
	recs, err := st.Read(delayLog, slots[0], slots[0]+1, 1, 0)
	require.NoError(t, err)
	assert.Empty(t, recs, "the earlier message's slot holds no record: its key moves nothing")
}
