package remote_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestPullMany_AMessageWhoseAnswerPassesTheRecordRoomIsDeliveredAlone: a
// PullMany call of one pull whose first message's records fit the room
// the call leaves for records (the client's limit less the slack), but
// whose answer does not, was answered "no new message" (put off for a
// call with room for it) although the message fits the client's limit:
// every call of its own, the one the client makes for a pull put off,
// put it off again, and the client asked again at once until the pull's
// wait ended, the message never delivered (a Pull call delivers it). It
// goes alone in what the call has left instead, as a message whose
// records pass that room does.
func TestPullMany_AMessageWhoseAnswerPassesTheRecordRoomIsDeliveredAlone(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "s", 1))
	const body = 200 << 10
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "s", Messages: []*equeue.Message{{Body: bytes.Repeat([]byte("L"), body)}}})
	require.NoError(t, err)
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	raw := rawClient(t, serve(t, srv, "127.0.0.1:0").addr)

	// Limits around the one whose room for records (the limit less 64
	// KiB of slack) the message's records just fill.
	for _, version := range []int32{equeue.StoredBatchVersion, 0} {
		putOff, refused := 0, 0
		for limit := body + 64<<10 - 64; limit < body+64<<10+192; limit++ {
			item := pullManyWithin(t, raw, limit, &pb.PullRequest{Topic: "s", Max: 32, StoredBatchVersion: version}).GetItems()[0]
			if item.GetError() != nil {
				// Right only when the message fits no answer within
				// limit: a Pull call refuses it too.
				one, err := raw.Pull(ctx, &pb.PullRequest{Topic: "s", Max: 32, StoredBatchVersion: version, MaxAnswerBytes: int32(limit)})
				if err == nil && one.GetStatus() == pb.PullStatus_PULL_STATUS_FOUND {
					refused++
				}
				continue
			}
			if item.GetResponse().GetStatus() != pb.PullStatus_PULL_STATUS_FOUND {
				if putOff == 0 {
					t.Logf("stored batch version %d, limit %d: %v", version, limit, item.GetResponse().GetStatus())
				}
				putOff++
			}
		}
		assert.Zero(t, putOff, "stored batch version %d: limits with which a call of its own put the pull off", version)
		assert.Zero(t, refused, "stored batch version %d: limits with which a PullMany call refused a message a Pull call delivers", version)
	}
}
