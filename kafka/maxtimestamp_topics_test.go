package kafka_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// sameCreation is an engine that reports every topic created at one
// time, as it does for a topic deleted and created again within a
// millisecond (CreatedAt has millisecond precision, and a delete and a
// create take less).
type sameCreation struct{ *equeue.Engine }

var creation = time.UnixMilli(1_700_000_000_000).UTC()

func (s sameCreation) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	ti, err := s.Engine.Topic(ctx, name)
	ti.CreatedAt = creation
	return ti, err
}

func (s sameCreation) Topics(ctx context.Context) ([]equeue.TopicInfo, error) {
	tis, err := s.Engine.Topics(ctx)
	for i := range tis {
		tis[i].CreatedAt = creation
	}
	return tis, err
}

// TestListOffsets_MaxTimestampOfTopicMadeAgain: a topic deleted and
// created again with the same name, even within the millisecond (so with
// the same CreatedAt, but another TopicInfo.ID), is answered from its own
// messages, never from what a scan of the topic deleted learned.
func TestListOffsets_MaxTimestampOfTopicMadeAgain(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	cl := kclient(t, serve(t, sameCreation{e}, nil))
	t0 := time.UnixMilli(1_700_000_000_000)
	appendBorn := func(borns ...time.Time) {
		t.Helper()
		var msgs []*equeue.Message
		for _, b := range borns {
			msgs = append(msgs, &equeue.Message{Body: []byte("v"), BornAt: b})
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}

	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	appendBorn(t0, t0.Add(time.Hour), t0)
	old := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), old.ErrorCode)
	require.Equal(t, int64(1), old.Offset)

	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	appendBorn(t0.Add(time.Minute), t0, t0)
	p := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(0), p.Offset, "the new topic's largest timestamp")
	assert.Equal(t, t0.Add(time.Minute).UnixMilli(), p.Timestamp)

	// Made again shorter than the scan had read.
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	appendBorn(t0)
	p = listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(0), p.Offset, "the new topic's only message")
	assert.Equal(t, t0.UnixMilli(), p.Timestamp)
}

// TestListOffsets_MaxTimestampOfTopicMadeAgainAfterFindingNone: a scan
// that read a topic's messages and found none to answer with (they had
// expired) is not taken on by the topic made again under the name, even
// with the same CreatedAt: the new topic is read from its first message.
func TestListOffsets_MaxTimestampOfTopicMadeAgainAfterFindingNone(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	cl := kclient(t, serve(t, sameCreation{e}, nil))
	t0 := time.UnixMilli(1_700_000_000_000)

	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var expired []*equeue.Message
	for range 3 {
		expired = append(expired, &equeue.Message{Body: []byte("v"), BornAt: t0, ExpiresAt: time.Now().Add(-time.Hour)})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: expired})
	require.NoError(t, err)
	old := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), old.ErrorCode)
	require.Equal(t, int64(-1), old.Offset, "no message to answer with")

	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var msgs []*equeue.Message
	for _, b := range []time.Time{t0, t0.Add(time.Hour), t0, t0, t0} {
		msgs = append(msgs, &equeue.Message{Body: []byte("v"), BornAt: b})
	}
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	p := listOffset(t, cl, "t", 0, -3)
	require.Equal(t, int16(0), p.ErrorCode)
	assert.Equal(t, int64(1), p.Offset, "the new topic's largest timestamp, before the offsets the old scan read")
	assert.Equal(t, t0.Add(time.Hour).UnixMilli(), p.Timestamp)
}

// serveServer is serve, returning the server too.
func serveServer(t testing.TB, b kafka.Broker) (*kafka.Server, string) {
	t.Helper()
	s, err := kafka.NewServer(b, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		require.ErrorIs(t, <-done, kafka.ErrServerClosed)
	})
	return s, lis.Addr().String()
}

// TestListOffsets_MaxTimestampForgetsDeletedTopics: what MAX_TIMESTAMP
// scans learned of a topic goes away with the topic: at once when it is
// deleted through the listener; when it is deleted in the engine, at the
// next request naming it, or else at the sweep that a growing number of
// topics brings.
func TestListOffsets_MaxTimestampForgetsDeletedTopics(t *testing.T) {
	kafka.SetMaxTimestampSweep(t, 3)
	e := openEngine(t, nil)
	ctx := testCtx(t)
	s, addr := serveServer(t, e)
	cl := kclient(t, addr)
	adm := kadmin(t, addr)
	scanned := func(name string) {
		t.Helper()
		require.NoError(t, e.CreateTopic(ctx, name, 2))
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: name, Messages: []*equeue.Message{{Body: []byte("v")}}})
		require.NoError(t, err)
		for q := range int32(2) {
			require.Equal(t, int16(0), listOffset(t, cl, name, q, -3).ErrorCode)
		}
	}
	scanned("a")
	scanned("b")
	require.Equal(t, 2, kafka.MaxTimestampTopics(s))

	res, err := adm.DeleteTopics(ctx, "a")
	require.NoError(t, err)
	require.NoError(t, res.Error())
	assert.Equal(t, 1, kafka.MaxTimestampTopics(s), "deleted through the listener")

	require.NoError(t, e.DeleteTopic(ctx, "b"))
	p := listOffset(t, cl, "b", 0, -3)
	assert.Equal(t, kerr.UnknownTopicOrPartition.Code, p.ErrorCode)
	assert.Equal(t, 0, kafka.MaxTimestampTopics(s), "found deleted by a request")

	// Deleted in the engine and never asked for again: the request that
	// finds 3 topics kept sweeps.
	scanned("c")
	scanned("d")
	require.NoError(t, e.DeleteTopic(ctx, "c"))
	require.NoError(t, e.DeleteTopic(ctx, "d"))
	scanned("e")
	require.Equal(t, 3, kafka.MaxTimestampTopics(s))
	scanned("f")
	assert.Equal(t, 2, kafka.MaxTimestampTopics(s), "c and d swept, e and f kept")
}

// TestListOffsets_MaxTimestampWithKadm: kadm's ListMaxTimestampOffsets,
// which does not retry OFFSET_NOT_AVAILABLE, gets the answer of a
// partition larger than 32 pulls in one request (before, a request made
// at most 32 pulls, and kadm returned the error): a request reads for a
// time (here a generous one, the machine being shared). A partition not
// read through in that time is answered OFFSET_NOT_AVAILABLE, which kadm
// returns.
func TestListOffsets_MaxTimestampWithKadm(t *testing.T) {
	kafka.SetMaxTimestampBudget(t, time.Minute)
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	adm := kadmin(t, serve(t, e, nil))
	t0 := time.UnixMilli(1_700_000_000_000)
	const n = 40 * equeue.MaxPullBatch // more than the 32 pulls a request made
	for start := 0; start < n; start += equeue.MaxPullBatch {
		var msgs []*equeue.Message
		for i := start; i < start+equeue.MaxPullBatch; i++ {
			born := t0.Add(time.Duration(i%997) * time.Millisecond)
			if i == n-100 {
				born = t0.Add(time.Hour)
			}
			msgs = append(msgs, &equeue.Message{Body: []byte("v"), BornAt: born})
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	listed, err := adm.ListMaxTimestampOffsets(ctx, "t")
	require.NoError(t, err)
	o, ok := listed.Lookup("t", 0)
	require.True(t, ok)
	require.NoError(t, o.Err)
	assert.Equal(t, int64(n-100), o.Offset)
	assert.Equal(t, t0.Add(time.Hour).UnixMilli(), o.Timestamp)
}

// TestListOffsets_MaxTimestampNotReadThroughWithKadm: a partition not read
// through in the time a request has is answered OFFSET_NOT_AVAILABLE,
// which kadm returns (as the README says); the next request goes on.
func TestListOffsets_MaxTimestampNotReadThroughWithKadm(t *testing.T) {
	kafka.SetMaxTimestampBudget(t, 0) // one pull a request
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "u", 1))
	adm := kadmin(t, serve(t, e, nil))
	t0 := time.UnixMilli(1_700_000_000_000)
	var msgs []*equeue.Message
	for range equeue.MaxPullBatch + 1 {
		msgs = append(msgs, &equeue.Message{Body: []byte("v"), BornAt: t0})
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "u", Messages: msgs})
	require.NoError(t, err)
	listed, err := adm.ListMaxTimestampOffsets(ctx, "u")
	require.NoError(t, err)
	o, ok := listed.Lookup("u", 0)
	require.True(t, ok)
	require.ErrorIs(t, o.Err, kerr.OffsetNotAvailable, "not read through: kadm does not retry")
	listed, err = adm.ListMaxTimestampOffsets(ctx, "u")
	require.NoError(t, err)
	o, ok = listed.Lookup("u", 0)
	require.True(t, ok)
	require.NoError(t, o.Err, "the next request goes on")
	assert.Equal(t, int64(0), o.Offset)
}
