package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// A token scoped to tenant-a cannot have a reply written outside tenant-a
// by naming another reply topic in its request: a client sends system
// properties as it likes, and a service that consumes tenant-a's topic on
// the engine answers where the request says.
func TestNamespace_TokenCannotAimRepliesOutside(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := namespaceServer(t, e)
	a := dial(t, s.addr, &remote.ClientOptions{Token: "tok-a"})
	require.NoError(t, a.CreateTopic(ctx, "rpc", 1))
	victims := []string{equeue.ReplyTopicPrefix + "root", equeue.ReplyTopicPrefix + "tenant-b:b"}
	for _, v := range victims {
		_, err := e.Route(ctx, v) // requesters' reply topics outside tenant-a
		require.NoError(t, err)
	}
	for _, v := range victims {
		m := &equeue.Message{Body: []byte("forged")}
		m.SetSysProperties(map[string]string{equeue.SysReplyTo: v, equeue.SysCorrelationID: "c1"})
		_, err := a.Append(ctx, &equeue.AppendRequest{Topic: "rpc", Messages: []*equeue.Message{m}})
		require.NoError(t, err)
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "tenant-a:rpc", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, len(victims))
	p := newProducer(t, e) // the service, on the engine
	for _, req := range res.Messages {
		_ = equeue.Reply(ctx, p, req, []byte("answer"), nil)
	}
	for _, v := range victims {
		got, err := e.Pull(ctx, &equeue.PullRequest{Topic: v, Max: 10})
		require.NoError(t, err)
		assert.Empty(t, got.Messages, "a reply reached %s", v)
	}
}

// A producer of a token scoped to tenant-a answers a request of tenant-a
// that a service consumed on the engine, whose reply address is the
// engine's name of the requester's reply topic ("%REPLY%tenant-a:<id>"),
// and is refused one of another namespace with equeue.ErrOutsideNamespace.
// Before, the token's view qualified the address again, and Reply
// returned ErrInvalidName for both.
func TestNamespace_TokenAnswersARequestConsumedOnTheEngine(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := namespaceServer(t, e)
	a := dial(t, s.addr, &remote.ClientOptions{Token: "tok-a"})
	require.NoError(t, a.CreateTopic(ctx, "rpc", 1))
	requester := newProducer(t, a)
	type answer struct {
		rep *equeue.Message
		err error
	}
	got := make(chan answer, 1)
	go func() {
		rep, err := requester.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("ping")})
		got <- answer{rep, err}
	}()
	var req *equeue.Message
	for req == nil {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "tenant-a:rpc", Max: 1, Wait: 5 * time.Second})
		require.NoError(t, err)
		if len(res.Messages) > 0 {
			req = res.Messages[0]
		}
	}
	replies := newProducer(t, dial(t, s.addr, &remote.ClientOptions{Token: "tok-a"}))
	require.NoError(t, equeue.Reply(ctx, replies, req, []byte("pong"), nil))
	select {
	case a := <-got:
		require.NoError(t, a.err)
		assert.Equal(t, "pong", string(a.rep.Body))
	case <-ctx.Done():
		t.Fatal("the request got no reply")
	}

	victim := equeue.ReplyTopicPrefix + "tenant-b:b"
	_, err := e.Route(ctx, victim)
	require.NoError(t, err)
	forged := &equeue.Message{Body: []byte("forged")}
	forged.SetSysProperties(map[string]string{equeue.SysReplyTo: victim, equeue.SysCorrelationID: "c1"})
	assert.ErrorIs(t, equeue.Reply(ctx, replies, forged, []byte("answer"), nil), equeue.ErrOutsideNamespace)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: victim, Max: 10})
	require.NoError(t, err)
	assert.Empty(t, res.Messages, "a reply reached %s", victim)
}
