package equeue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// delayLog is the store queue of the engine's delay log.
var delayLog = store.QueueID{Topic: 0, Queue: 0}

func delayLogRecords(t *testing.T, r *faultRig) int {
	t.Helper()
	first, next, ok, err := r.FS.Bounds(delayLog)
	require.NoError(t, err)
	if !ok {
		return 0
	}
	recs, err := r.FS.Read(delayLog, first, next, int(next-first)+1, 0)
	require.NoError(t, err)
	return len(recs)
}

// Issue 11, point 4: a delay-log record whose index key is gone (the move
// was stored, the trim that follows it failed or the process died before
// it) is removed on open; pending records stay and nothing is delivered twice.
func TestWriter_OrphanDelayRecordsAreSweptOnOpen(t *testing.T) {
	r := newFaultRig(t, "badger", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("later"), Delay: time.Hour}}})
	require.NoError(t, err)
	r.FS.FailDeletes(1) // the trim after the move
	_, err = r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("soon"), Delay: 10 * time.Millisecond}}})
	require.NoError(t, err)
	eventually(t, waitLong, func() bool { return len(queueBodies(t, r.E, "t", 0)) == 1 }, "the due message moved")
	require.Equal(t, 1, metaKeys(t, r.FS, "d/"), "one message still pending")
	require.Equal(t, 2, delayLogRecords(t, r), "the moved record was not trimmed")

	r.reopen()
	assert.Equal(t, 1, delayLogRecords(t, r), "the orphan is swept, the pending record kept")
	assert.Equal(t, 1, metaKeys(t, r.FS, "d/"))
	assert.Equal(t, []string{"soon"}, queueBodies(t, r.E, "t", 0))
}
