package equeue_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A client's append cannot give a message a retry origin: system
// properties naming one (forged by a remote client, or carried over from a
// consumed retry an application sends on) are not stored, so the
// message's dead letter names the topic it was stored in, and a redrive
// sends it back there. A request's reply address stays.
func TestAppend_ClientCannotSetARetryOrigin(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	f := newDLQFixture(t, e)
	require.NoError(t, e.CreateTopic(ctx, "elsewhere", 1))
	m := &equeue.Message{Body: []byte("x")}
	m.SetSysProperties(map[string]string{
		equeue.SysOriginTopic: "elsewhere", equeue.SysOriginTopicID: "1", equeue.SysOriginQueue: "0", equeue.SysOriginOffset: "7",
		equeue.SysOriginPriority: "3", equeue.SysLastError: "made up", equeue.SysReplyTo: "%REPLY%r",
	})
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{m}})
	require.NoError(t, err)
	assert.Equal(t, "elsewhere", m.SysProperty(equeue.SysOriginTopic), "the caller's message is not changed")

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: f.next, Max: 1, Group: "g", Member: "m", Epoch: f.grant.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	got := res.Messages[0]
	for _, k := range []string{equeue.SysOriginTopic, equeue.SysOriginTopicID, equeue.SysOriginQueue, equeue.SysOriginOffset, equeue.SysOriginPriority, equeue.SysLastError} {
		assert.Empty(t, got.SysProperty(k), k)
	}
	assert.Equal(t, "%REPLY%r", got.SysProperty(equeue.SysReplyTo))

	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: f.grant, Offset: got.Offset, DeadLetter: true})
	require.NoError(t, err)
	dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 10})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.Equal(t, "t", dls[0].Message.Topic, "the dead letter names where the message was stored")
	assert.Equal(t, got.Offset, dls[0].Message.Offset)
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.Equal(t, int64(0), queueEnd(t, e, "elsewhere"), "nothing went to the forged origin")
}
