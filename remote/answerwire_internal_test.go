package remote

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

func TestEncodePullAnswer_SameAsProtobuf(t *testing.T) {
	var msgs []*equeue.Message
	for _, req := range appendCases() {
		msgs = append(msgs, req.Messages...)
	}
	for i, m := range msgs {
		m.Offset, m.StoredAt = int64(100+i), time.Unix(0, int64(i+1))
	}
	base := equeue.PullResult{Status: equeue.PullFound, Messages: msgs, NextOffset: int64(100 + len(msgs)), MinOffset: 3,
		MaxOffset: 1 << 40, Corrupt: []int64{1, 70000}, Expired: 2, Priority: 2, DeletedTopicRetries: 3}
	whole, err := pullAnswer(base, 1<<20, nil)
	require.NoError(t, err)
	full := proto.Size(whole)
	for _, limit := range []int{1 << 20, full, full - 1, full / 2, 200, 60} {
		want, wantErr := pullAnswer(base, limit, nil)
		out, ok, err := encodePullAnswer(base, limit)
		if wantErr != nil {
			assert.Equal(t, wantErr, err, "limit %d", limit)
			continue
		}
		require.NoError(t, err)
		require.True(t, ok)
		var got pb.PullResponse
		require.NoError(t, proto.Unmarshal(*out.buf, &got))
		assert.True(t, proto.Equal(want, &got), "limit %d: %d of %d messages", limit, len(got.GetMessages()), len(want.GetMessages()))
		assert.Equal(t, proto.Size(want), len(*out.buf), "limit %d", limit)
	}
	// No messages, or an unusual status.
	for _, res := range []equeue.PullResult{{}, {Status: equeue.PullNoNewMessage, NextOffset: 9}, {Status: equeue.PullStatus(-1)}} {
		want, err := pullAnswer(res, 100, nil)
		require.NoError(t, err)
		out, ok, err := encodePullAnswer(res, 100)
		require.NoError(t, err)
		require.True(t, ok)
		var got pb.PullResponse
		require.NoError(t, proto.Unmarshal(*out.buf, &got))
		assert.True(t, proto.Equal(want, &got))
	}
	// What protobuf refuses to encode is left to it.
	_, ok, err := encodePullAnswer(equeue.PullResult{Messages: []*equeue.Message{{Tag: "\xff"}}}, 1<<20)
	require.NoError(t, err)
	assert.False(t, ok)
	_, wantErr := pullAnswer(equeue.PullResult{Messages: []*equeue.Message{nil}}, 1<<20, nil)
	_, _, err = encodePullAnswer(equeue.PullResult{Messages: []*equeue.Message{nil}}, 1<<20)
	assert.Equal(t, wantErr, err)
}
