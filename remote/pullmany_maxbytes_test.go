package remote_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestPullMany_APullsMaxBytesBoundsItsRecordsNotItsAnswer: a pull's
// MaxBytes bounds the stored bytes of its messages, in process and in a
// Pull call; a PullMany call bounded the first message's answer by it
// too, so a message whose records fit the pull's bound but whose answer,
// with its framing, did not was answered ErrMessageTooLarge (a message
// that fits no answer), although the client's limit had room for it and a
// Pull call with the same bound and limit delivers it. Its thousand calls
// of 200 KiB each outlast ctxT's minute on a loaded machine.
func TestPullMany_APullsMaxBytesBoundsItsRecordsNotItsAnswer(t *testing.T) {
	ctx := ctxWithin(t, 5*time.Minute)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "s", 1))
	const body = 200 << 10
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "s", Messages: []*equeue.Message{{Body: bytes.Repeat([]byte("L"), body)}}})
	require.NoError(t, err)
	// The message's stored bytes: the least MaxBytes with which an
	// in-process pull delivers it.
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "s", Max: 1, MaxBytes: 1})
	var tl *equeue.MessageTooLargeError
	require.True(t, errors.As(err, &tl), "%v", err)
	records := tl.Size
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "s", Max: 32, MaxBytes: records})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)

	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	raw := rawClient(t, serve(t, srv, "127.0.0.1:0").addr)

	// Limits around the one whose room for records (the limit less 64
	// KiB of slack) the message's records just fill.
	for _, version := range []int32{equeue.StoredBatchVersion, 0} {
		refused := 0
		for limit := body + 64<<10 - 64; limit < body+64<<10+192; limit++ {
			pull := &pb.PullRequest{Topic: "s", Max: 32, MaxBytes: int32(records), StoredBatchVersion: version}
			one, err := raw.Pull(ctx, &pb.PullRequest{Topic: "s", Max: 32, MaxBytes: int32(records), StoredBatchVersion: version, MaxAnswerBytes: int32(limit)})
			require.NoError(t, err, "a Pull call, limit %d", limit)
			require.Equal(t, pb.PullStatus_PULL_STATUS_FOUND, one.GetStatus())
			item := pullManyWithin(t, raw, limit, pull).GetItems()[0]
			if item.GetError() != nil {
				if refused == 0 {
					t.Logf("stored batch version %d, limit %d: %v", version, limit, item.GetError().GetMessage())
				}
				refused++
				continue
			}
			assert.Equal(t, pb.PullStatus_PULL_STATUS_FOUND, item.GetResponse().GetStatus(), "stored batch version %d, limit %d", version, limit)
		}
		assert.Zero(t, refused, "stored batch version %d: limits with which a PullMany call refused a message a Pull call delivers", version)
	}
}
