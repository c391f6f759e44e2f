package remote_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestRequestReply_TokenRights: a produce-only requester reads its replies
// and deletes its reply topic, a consume-only replier writes replies, and
// neither may touch user topics beyond its rights or delete groups.
func TestRequestReply_TokenRights(t *testing.T) {
	e := openEngine(t, nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 2))
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{
		"req": remote.RightProduce, "rep": remote.RightConsume, "adm": remote.RightAdmin,
	}})
	reqC := dial(t, s.addr, &remote.ClientOptions{Token: "req"})
	repC := dial(t, s.addr, &remote.ClientOptions{Token: "rep"})

	rp := newProducer(t, repC)
	startConsumer(t, repC, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "rpc"}},
		Handler: func(ctx context.Context, m *equeue.Message) error {
			return equeue.Reply(ctx, rp, m, append([]byte("re:"), m.Body...), nil)
		}})
	p := newProducer(t, reqC)
	rep, err := p.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("hi")})
	require.NoError(t, err)
	assert.Equal(t, "re:hi", string(rep.Body))

	// The consume-only token still cannot send to a user topic.
	_, err = rp.Send(ctx, &equeue.Message{Topic: "rpc", Body: []byte("x")})
	assert.ErrorIs(t, err, remote.ErrPermissionDenied)
	// It can neither create nor delete reply topics...
	_, err = repC.Route(ctx, equeue.ReplyTopicPrefix+"x")
	assert.ErrorIs(t, err, remote.ErrPermissionDenied)
	assert.ErrorIs(t, repC.DeleteReplyTopic(ctx, equeue.ReplyTopicPrefix+"x"), remote.ErrPermissionDenied)
	// ...and a producer deletes nothing but reply topics.
	assert.ErrorIs(t, reqC.DeleteReplyTopic(ctx, "rpc"), equeue.ErrInvalidName)

	// Deleting a group needs the admin right.
	assert.ErrorIs(t, reqC.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}), remote.ErrPermissionDenied)
	adm := dial(t, s.addr, &remote.ClientOptions{Token: "adm"})
	assert.ErrorIs(t, adm.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}), equeue.ErrGroupHasMembers)

	var topics []string
	infos, err := e.Topics(ctx)
	require.NoError(t, err)
	for _, ti := range infos {
		topics = append(topics, ti.Name)
	}
	require.NoError(t, p.Close())
	infos, err = e.Topics(ctx)
	require.NoError(t, err)
	assert.Len(t, infos, len(topics)-1, "Close deleted the reply topic over the wire")
}
