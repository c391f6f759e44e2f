package remote

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

func TestErrorTable_EverySentinelRoundTrips(t *testing.T) {
	for _, s := range sentinels {
		t.Run(s.reason, func(t *testing.T) {
			err := fromStatus(toStatus(fmt.Errorf("somewhere: %w", s.err)))
			assert.Equal(t, s.code, status.Code(err))
			assert.Contains(t, err.Error(), "somewhere: ")
			if s.err == equeue.ErrClosed {
				assert.ErrorIs(t, err, ErrUnavailable)
				assert.NotErrorIs(t, err, equeue.ErrClosed)
				return
			}
			assert.ErrorIs(t, err, s.err)
		})
	}
	// Every sentinel of package equeue has a row.
	for _, e := range []error{equeue.ErrClosed, equeue.ErrLocked, equeue.ErrInvalidOptions, equeue.ErrInvalidName,
		equeue.ErrInvalidArgument, equeue.ErrTopicNotFound, equeue.ErrTopicExists, equeue.ErrQueueNotFound,
		equeue.ErrQueueNotWritable, equeue.ErrMessageTooLarge, equeue.ErrBatchTooLarge, equeue.ErrInvalidFilter,
		equeue.ErrCorrupt, equeue.ErrGroupNotFound, equeue.ErrNotMember, equeue.ErrFenced,
		equeue.ErrSubscriptionMismatch, equeue.ErrHandlerPanic, equeue.ErrInvalidDelay, equeue.ErrIndeterminate,
		equeue.ErrPartialDuplicate} {
		found := false
		for _, s := range sentinels {
			found = found || s.err == e
		}
		assert.True(t, found, "no wire name for %v", e)
	}
}

func TestErrorTable_PlainErrors(t *testing.T) {
	err := fromStatus(toStatus(errors.New("disk on fire")))
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.Equal(t, "disk on fire", err.Error())
	assert.Nil(t, toStatus(nil))
	assert.Nil(t, fromStatus(nil))
	// Statuses without our detail map by code.
	for code, want := range map[codes.Code]error{
		codes.Unavailable:      ErrUnavailable,
		codes.Unauthenticated:  ErrUnauthenticated,
		codes.PermissionDenied: ErrPermissionDenied,
	} {
		assert.ErrorIs(t, fromStatus(status.Error(code, "x")), want, "code %s", code)
	}
	// gRPC's own size limits, whichever way the message went, and only they,
	// are a message too large: another ResourceExhausted without the
	// server's details (a proxy's rate limit) is no refusal of the
	// server's either.
	for _, msg := range []string{
		"grpc: received message larger than max (5000000 vs. 4194304)",
		"grpc: trying to send message larger than max (5000000 vs. 4194304)",
		"grpc: received message after decompression larger than max (5000000 vs. 4194304)",
	} {
		err := fromStatus(status.Error(codes.ResourceExhausted, msg))
		assert.ErrorIs(t, err, equeue.ErrMessageTooLarge, msg)
		assert.NotErrorIs(t, err, equeue.ErrBusy, msg)
	}
	rate := fromStatus(status.Error(codes.ResourceExhausted, "rate limited"))
	assert.NotErrorIs(t, rate, equeue.ErrBusy)
	assert.NotErrorIs(t, rate, equeue.ErrMessageTooLarge)
}

func TestSyncPolicy_RoundTrips(t *testing.T) {
	for _, p := range []equeue.SyncPolicy{equeue.SyncAlways, equeue.SyncNever, equeue.SyncInterval(250 * time.Millisecond), equeue.SyncInterval(90 * time.Minute)} {
		k, d, err := syncToPB(&p)
		require.NoError(t, err)
		got, err := syncFromPB(k, d)
		require.NoError(t, err)
		require.NotNil(t, got)
		assert.Equal(t, p, *got, "%s", p)
	}
	k, d, err := syncToPB(nil)
	require.NoError(t, err)
	got, err := syncFromPB(k, d)
	require.NoError(t, err)
	assert.Nil(t, got)
	_, err = syncFromPB(99, nil)
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
}

func TestTimes_ZeroIsZero(t *testing.T) {
	assert.Equal(t, int64(0), nanos(time.Time{}))
	assert.True(t, fromNanos(0).IsZero())
	now := time.Now()
	assert.True(t, now.Equal(fromNanos(nanos(now))))
}

func TestAssignment_RoundTrips(t *testing.T) {
	g := func(q int, e int64) equeue.Grant {
		return equeue.Grant{QueueRef: equeue.QueueRef{Topic: "t", Queue: q}, Epoch: e}
	}
	for _, a := range []equeue.Assignment{
		{Group: "g", Member: "m", Epoch: 3, Version: 9, Queues: []equeue.Grant{}},
		{Group: "g", Member: "m", Epoch: 3, Version: 9, Queues: []equeue.Grant{g(0, 2), g(1, 3)}, Pending: 1,
			Revoking: []equeue.Grant{g(2, 1)}, SessionTimeout: 7 * time.Second, MaxPullWait: 15 * time.Second},
	} {
		assert.Equal(t, a, assignmentFromPB(assignmentToPB(a)))
	}
}

// TestAssignment_SessionTimeoutFromAnOlderServer: a server of a version
// before Assignment.SessionTimeout sends none, which reads as zero
// (unknown); a session the wire cannot hold (negative) reads as unknown
// too rather than as a lease that has already ended.
func TestAssignment_SessionTimeoutFromAnOlderServer(t *testing.T) {
	assert.Zero(t, assignmentFromPB(&pb.Assignment{Group: "g", Member: "m"}).SessionTimeout)
	assert.Zero(t, assignmentFromPB(&pb.Assignment{SessionTimeout: durationpb.New(-time.Second)}).SessionTimeout)
}

// TestAssignment_MaxPullWaitFromAnOlderServer: a server of a version
// before Assignment.MaxPullWait sends none, which reads as zero (unknown);
// so does one the wire cannot hold (negative).
func TestAssignment_MaxPullWaitFromAnOlderServer(t *testing.T) {
	assert.Zero(t, assignmentFromPB(&pb.Assignment{Group: "g", Member: "m"}).MaxPullWait)
	assert.Zero(t, assignmentFromPB(&pb.Assignment{MaxPullWait: durationpb.New(-time.Second)}).MaxPullWait)
}

// TestConsumeFromMapping: the wire keeps 0 = latest for older clients; the
// engine's zero value (the default, earliest) travels as its own value.
func TestConsumeFromMapping(t *testing.T) {
	for _, f := range []equeue.ConsumeFrom{equeue.ConsumeFromDefault, equeue.ConsumeFromEarliest, equeue.ConsumeFromTimestamp, equeue.ConsumeFromLatest} {
		assert.Equal(t, f, consumeFromFromPB(consumeFromToPB(f)), f.String())
	}
	assert.Equal(t, equeue.ConsumeFromLatest, consumeFromFromPB(0), "what an older client sends by default")
	assert.Equal(t, pb.ConsumeFrom_CONSUME_FROM_DEFAULT, consumeFromToPB(equeue.ConsumeFrom(0)))
}

// A queue's stored message count crosses the wire as the engine gives it
// (less than its offsets' span when offsets were lost from the store, 0
// for an empty queue); from a server before the field, the client gives
// the span.
func TestTopicInfo_QueueMessagesCrossTheWire(t *testing.T) {
	in := equeue.TopicInfo{Name: "t", Messages: 2, Queues: []equeue.QueueInfo{
		{ID: 0, MinOffset: 0, MaxOffset: 20, Writable: true, Messages: 2},
		{ID: 1, MinOffset: 5, MaxOffset: 5, Writable: true, Messages: 0},
	}}
	assert.Equal(t, in, topicFromPB(topicToPB(in)))

	old := &pb.TopicInfo{Name: "t", Queues: []*pb.QueueInfo{{Id: 0, MinOffset: 3, MaxOffset: 10}}}
	assert.Equal(t, int64(7), topicFromPB(old).Queues[0].Messages, "a server before the field: the offsets' span")
}

// TestDeadLetterFromPB_NegativePriority: a negative priority from a broker
// is no lane; the client takes it as none sent, as the engine ignores a
// negative lane a copy records, so Message.Priority is never negative.
func TestDeadLetterFromPB_NegativePriority(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sent     int32
		recorded string
		want     int
	}{
		{"negative, nothing recorded", -1, "", 0},
		{"most negative, nothing recorded", -1 << 31, "", 0},
		{"negative, lane recorded", -3, "2", 2},
		{"positive", 3, "2", 3},
	} {
		m := &pb.Message{Topic: "%DLQ%g", Body: []byte("dead")}
		if tc.recorded != "" {
			m.SysProperties = map[string]string{equeue.SysOriginPriority: tc.recorded}
		}
		got, err := deadLetterFromPB(&pb.DeadLetter{Offset: 7, Message: m, Priority: tc.sent})
		require.NoError(t, err, tc.name)
		require.NotNil(t, got.Message, tc.name)
		assert.Equal(t, tc.want, got.Message.Priority, "%s: sent %d", tc.name, tc.sent)
	}
}
