package remote_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRemote_NilRequestsAnswerAsInProcess calls every Broker method of a
// client and of the engine with nil requests, and with requests of nil
// messages or grants: each is refused with ErrInvalidArgument over both, as
// in process, and nothing panics.
func TestRemote_NilRequestsAnswerAsInProcess(t *testing.T) {
	ctx := ctxT(t)
	e, client := setup(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	calls := map[string]func(b equeue.Broker) error{
		"Append": func(b equeue.Broker) error { _, err := b.Append(ctx, nil); return err },
		"AppendNilMsg": func(b equeue.Broker) error {
			_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{nil}})
			return err
		},
		"AppendNoMsgs":  func(b equeue.Broker) error { _, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t"}); return err },
		"Pull":          func(b equeue.Broker) error { _, err := b.Pull(ctx, nil); return err },
		"JoinGroup":     func(b equeue.Broker) error { _, err := b.JoinGroup(ctx, nil); return err },
		"Heartbeat":     func(b equeue.Broker) error { _, err := b.Heartbeat(ctx, nil); return err },
		"LeaveGroup":    func(b equeue.Broker) error { return b.LeaveGroup(ctx, nil) },
		"CommitOffsets": func(b equeue.Broker) error { return b.CommitOffsets(ctx, nil) },
		"SendBack":      func(b equeue.Broker) error { _, err := b.SendBack(ctx, nil); return err },
		"JoinNilSub": func(b equeue.Broker) error {
			_, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m"})
			return err
		},
		"ReleaseNone": func(b equeue.Broker) error { return b.ReleaseQueues(ctx, "", "", nil) },
		"FetchNone":   func(b equeue.Broker) error { _, err := b.FetchOffsets(ctx, "", "", nil); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			lerr := call(e)
			rerr := call(client)
			t.Logf("in process: %v; remote: %v", lerr, rerr)
			assert.Equal(t, lerr == nil, rerr == nil)
			for _, s := range []error{equeue.ErrInvalidArgument, equeue.ErrTopicNotFound, equeue.ErrGroupNotFound, equeue.ErrNotMember, equeue.ErrInvalidName} {
				assert.Equal(t, errorsIsAny(lerr, s), errorsIsAny(rerr, s), "%v: in process %v, remote %v", s, lerr, rerr)
			}
		})
	}
}

// errorsIsAny reports whether err matches one of targets.
func errorsIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}
