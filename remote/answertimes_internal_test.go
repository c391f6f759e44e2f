package remote

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestPullAnswer_StoredAtTheWireCannotCarry: a StoredAt outside the wire's
// range (only a Backend of one's own or a bug sets one) is refused by both
// encoders, as the other times are, rather than sent as another date. An
// append's StoredAt, which the engine ignores, is still sent.
func TestPullAnswer_StoredAtTheWireCannotCarry(t *testing.T) {
	for _, at := range []time.Time{time.Date(1500, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 6, 1, 0, 0, 0, 0, time.UTC)} {
		res := equeue.PullResult{Status: equeue.PullFound, NextOffset: 2, Messages: []*equeue.Message{
			{Topic: "t", Body: []byte("ok"), StoredAt: time.Unix(0, 1)},
			{Topic: "t", Body: []byte("far"), Offset: 1, StoredAt: at},
		}}
		_, err := pullAnswer(res, 1<<20, nil)
		require.ErrorIs(t, err, equeue.ErrInvalidArgument, "protobuf, stored at %v", at)
		assert.Contains(t, err.Error(), "message 1: stored-at")
		_, _, err = encodePullAnswer(res, 1<<20)
		require.ErrorIs(t, err, equeue.ErrInvalidArgument, "hand encoder, stored at %v", at)
		assert.Contains(t, err.Error(), "message 1: stored-at")

		req := &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("again"), StoredAt: at}}}
		_, err = appendToWire(req)
		require.NoError(t, err, "an append's stored-at is the engine's to set")
		_, ok, err := encodeAppend(req)
		require.NoError(t, err)
		assert.True(t, ok)
	}
}

// TestDeadLetterPage_TimesTheWireCannotCarry: a dead letter's times are
// checked as a pull answer's are: a StoredAt, BornAt or DeliverAt outside
// the wire's range is refused with ErrInvalidArgument, naming the entry,
// rather than sent as another date, and an ExpiresAt after the range
// (never) is sent as none.
func TestDeadLetterPage_TimesTheWireCannotCarry(t *testing.T) {
	far := []time.Time{time.Date(1500, 6, 1, 0, 0, 0, 0, time.UTC), time.Date(2300, 6, 1, 0, 0, 0, 0, time.UTC)}
	for _, at := range far {
		for name, set := range map[string]func(*equeue.Message){
			"stored-at":  func(m *equeue.Message) { m.StoredAt = at },
			"born-at":    func(m *equeue.Message) { m.BornAt = at },
			"deliver-at": func(m *equeue.Message) { m.DeliverAt = at },
		} {
			bad := &equeue.Message{Topic: "t", Body: []byte("far"), Offset: 1, StoredAt: time.Unix(0, 1)}
			set(bad)
			page := []equeue.DLQEntry{
				{Offset: 4, Message: &equeue.Message{Topic: "t", Body: []byte("ok"), StoredAt: time.Unix(0, 1)}},
				{Offset: 5, Message: bad},
			}
			_, err := deadLettersAnswer("g", page, 1<<20)
			require.ErrorIs(t, err, equeue.ErrInvalidArgument, "%s %v", name, at)
			assert.Contains(t, err.Error(), "offset 5", "%s %v", name, at)
			assert.Contains(t, err.Error(), name, "%s %v", name, at)
		}
	}

	never := []equeue.DLQEntry{{Offset: 4, Message: &equeue.Message{Topic: "t", Body: []byte("ok"), StoredAt: time.Unix(0, 1), ExpiresAt: far[1]}}}
	res, err := deadLettersAnswer("g", never, 1<<20)
	require.NoError(t, err)
	require.Len(t, res.GetDeadLetters(), 1)
	assert.Zero(t, res.GetDeadLetters()[0].GetMessage().GetExpiresAtUnixNano(), "an expiry after the range is never, sent as none")
}
