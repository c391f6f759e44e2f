package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPrepare_OneAllocationPerSend: preparing a one-message send whose ID
// the engine generates allocates once, the record and the ID's text
// together, and what it prepared is the ID and a record that decodes to
// the message under that ID.
func TestPrepare_OneAllocationPerSend(t *testing.T) {
	ctx := context.Background()
	e, err := Open("", &Options{InMemory: true})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	m := &Message{Topic: "t", Body: []byte("body"), Keys: []string{"k"}}
	c := &command{}
	req := AppendRequest{Topic: "t", Messages: c.msg1[:]}
	c.msg1[0] = m
	now := time.Now()
	allocs := testing.AllocsPerRun(100, func() {
		*c = command{}
		c.msg1[0] = m
		req.Messages = c.msg1[:]
		if _, err := e.prepareInto(ctx, &req, c, now); err != nil {
			panic(err)
		}
	})
	assert.Equal(t, 1.0, allocs, "allocations per prepared send")

	*c = command{}
	c.msg1[0] = m
	req.Messages = c.msg1[:]
	ids, err := e.prepareInto(ctx, &req, c, now)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	rec := c.recs[0]
	assert.Equal(t, len(rec), cap(rec), "the record ends its slice: appending to it copies")
	sealRecord(rec, now)
	got, err := decodeRecord(rec)
	require.NoError(t, err)
	assert.Equal(t, ids[0], got.ID)
	assert.Len(t, ids[0], engineIDLen)
	assert.Equal(t, m.Body, got.Body)
	assert.Equal(t, m.Keys, got.Keys)
}

// TestCodec_NewIDWithRecord: the ID encodeRecordNewID returns is the
// engine ID's text, for a record that shares its allocation and for one
// too large to, and the record is the one encodeRecordID writes.
func TestCodec_NewIDWithRecord(t *testing.T) {
	ids := newIDSource()
	for _, body := range []int{0, 100, sharedIDMaxRecord, 4 << 10} {
		raw, at := ids.nextRaw(time.Now())
		m := &Message{Body: make([]byte, body)}
		rec, id := encodeRecordNewID(m, raw, at)
		assert.Equal(t, formatEngineID(raw), id, "body of %d", body)
		assert.Equal(t, encodeRecordID(m, id, raw, true, at), rec, "body of %d", body)
		assert.Equal(t, len(rec), cap(rec), "body of %d", body)
		sealRecord(rec, at) // sealing leaves the ID's text alone
		assert.Equal(t, formatEngineID(raw), id, "body of %d", body)
	}
}
