package remote_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// replyOwnerTokens are the tokens of the reply topic ownership tests: two
// requesters with the produce right alone, each also scoped to a
// namespace, a service with the consume right and an operator with the
// admin right.
var replyOwnerTokens = map[string]remote.Rights{
	"req-a": remote.RightProduce, "req-b": remote.RightProduce,
	"ns-a": remote.RightProduce, "ns-b": remote.RightProduce,
	"svc": remote.RightConsume, "ops": remote.RightAdmin,
}

func replyOwnerServer(t *testing.T, e *equeue.Engine, addr string) *server {
	t.Helper()
	return startServer(t, e, addr, &remote.ServerOptions{
		Tokens:          replyOwnerTokens,
		TokenNamespaces: map[string]string{"ns-a": "tenant-a", "ns-b": "tenant-a"},
	})
}

// pendingRequest is a Request running in its own goroutine.
type pendingRequest struct {
	rep chan *equeue.Message
	err chan error
}

// startRequest sends a request to topic through p and returns it running.
func startRequest(ctx context.Context, p *equeue.Producer, topic string) *pendingRequest {
	r := &pendingRequest{rep: make(chan *equeue.Message, 1), err: make(chan error, 1)}
	go func() {
		rep, err := p.Request(ctx, &equeue.Message{Topic: topic, Body: []byte("question")})
		r.rep <- rep
		r.err <- err
	}()
	return r
}

// takeRequest waits for the one request stored in engine topic topic and
// returns it: what a service answering it sees, its reply address too.
func takeRequest(t *testing.T, e *equeue.Engine, topic string) *equeue.Message {
	t.Helper()
	ctx := ctxT(t)
	for {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Max: 1, Wait: time.Second})
		require.NoError(t, err)
		if len(res.Messages) > 0 {
			return res.Messages[0]
		}
	}
}

// A produce-only token that learned another requester's reply topic name
// (a service sees it in every request) can neither read the replies nor
// delete the topic: both are refused with ErrPermissionDenied, the topic
// stays, and its requester gets its reply. Before, the name was all that
// protected the topic, and both calls went through.
func TestReplyTopic_OtherProduceTokenCannotReadOrDeleteIt(t *testing.T) {
	for _, c := range []struct {
		name, owner, other, requests string // requests: the engine's name of the request topic
	}{
		{"engine", "req-a", "req-b", "rpc"},
		{"namespace", "ns-a", "ns-b", "tenant-a:rpc"},
		{"namespace owner, engine token", "ns-a", "req-b", "tenant-a:rpc"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctx, c.requests, 1))
			s := replyOwnerServer(t, e, "")
			owner := dial(t, s.addr, &remote.ClientOptions{Token: c.owner})
			other := dial(t, s.addr, &remote.ClientOptions{Token: c.other})

			pending := startRequest(ctx, newProducer(t, owner), "rpc")
			req := takeRequest(t, e, c.requests)
			replyTo := req.SysProperty(equeue.SysReplyTo)
			require.True(t, equeue.IsReplyTopic(replyTo), "reply address %q", replyTo)

			// The other token tries the address as the request carries it
			// and as its requester names it (unqualified in a namespace).
			_, id, _ := cutNamespace(replyTo)
			for _, name := range []string{replyTo, equeue.ReplyTopicPrefix + id} {
				_, err := other.Pull(ctx, &equeue.PullRequest{Topic: name, Max: 10})
				assert.ErrorIs(t, err, remote.ErrPermissionDenied, "pull of %s by %s", name, c.other)
				err = other.DeleteReplyTopic(ctx, name)
				assert.ErrorIs(t, err, remote.ErrPermissionDenied, "delete of %s by %s", name, c.other)
			}
			_, err := e.Topic(ctx, engineReplyTopic(replyTo, c.requests))
			require.NoError(t, err, "the reply topic is still there")

			require.NoError(t, equeue.Reply(ctx, newProducer(t, e), req, []byte("answer"), nil))
			require.NoError(t, <-pending.err)
			assert.Equal(t, "answer", string((<-pending.rep).Body))
		})
	}
}

// The rights that reach every topic still reach reply topics: a
// consume-only token (a service) reads any of them, an admin token deletes
// any of them; and the requester reads and deletes its own.
func TestReplyTopic_BroadRightsAndTheOwnerStillReachIt(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
	s := replyOwnerServer(t, e, "")
	owner := dial(t, s.addr, &remote.ClientOptions{Token: "req-a"})
	svc := dial(t, s.addr, &remote.ClientOptions{Token: "svc"})
	ops := dial(t, s.addr, &remote.ClientOptions{Token: "ops"})

	name := owner.NewReplyTopicName()
	require.True(t, equeue.IsReplyTopic(name), "%q", name)
	assert.NotEqual(t, name, owner.NewReplyTopicName(), "each name is fresh")
	_, err := owner.Route(ctx, name)
	require.NoError(t, err)
	_, err = owner.Pull(ctx, &equeue.PullRequest{Topic: name, Max: 10})
	require.NoError(t, err, "the owner reads its reply topic")
	_, err = svc.Pull(ctx, &equeue.PullRequest{Topic: name, Max: 10})
	require.NoError(t, err, "the consume right reads any topic")
	require.NoError(t, ops.DeleteReplyTopic(ctx, name), "the admin right deletes any topic")
	_, err = e.Topic(ctx, name)
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)

	_, err = owner.Route(ctx, name)
	require.NoError(t, err)
	require.NoError(t, owner.DeleteReplyTopic(ctx, name), "the owner deletes its reply topic")
	_, err = svc.Route(ctx, name)
	require.ErrorIs(t, err, remote.ErrPermissionDenied, "the consume right creates no topic")
}

// Ownership is in the reply topic's name, not in the server's memory:
// through a restarted server the requester still reads and deletes the
// reply topic it made before, and the other token is still refused.
func TestReplyTopic_OwnerSurvivesServerRestart(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "rpc", 1))
	s := replyOwnerServer(t, e, "")
	owner := dial(t, s.addr, &remote.ClientOptions{Token: "req-a"})
	other := dial(t, s.addr, &remote.ClientOptions{Token: "req-b"})

	pending := startRequest(ctx, newProducer(t, owner), "rpc")
	req := takeRequest(t, e, "rpc")
	replyTo := req.SysProperty(equeue.SysReplyTo)
	require.NoError(t, equeue.Reply(ctx, newProducer(t, e), req, []byte("answer"), nil))
	require.NoError(t, <-pending.err)
	<-pending.rep

	s.stop()
	replyOwnerServer(t, e, s.addr)

	var got *equeue.PullResult
	eventually(t, 30*time.Second, func() bool {
		res, err := owner.Pull(ctx, &equeue.PullRequest{Topic: replyTo, Max: 10})
		if err != nil {
			require.ErrorIs(t, err, remote.ErrUnavailable, "only while the client reconnects")
			return false
		}
		got = &res
		return true
	}, "the owner reads its reply topic through the restarted server")
	require.Len(t, got.Messages, 1)
	assert.Equal(t, "answer", string(got.Messages[0].Body))
	_, err := other.Pull(ctx, &equeue.PullRequest{Topic: replyTo, Max: 10})
	assert.ErrorIs(t, err, remote.ErrPermissionDenied)
	assert.ErrorIs(t, other.DeleteReplyTopic(ctx, replyTo), remote.ErrPermissionDenied)
	require.NoError(t, owner.DeleteReplyTopic(ctx, replyTo))
}

// cutNamespace splits a reply address into its namespace and id
// ("%REPLY%tenant:id" -> "tenant", "id", true).
func cutNamespace(replyTo string) (ns, id string, ok bool) {
	rest := strings.TrimPrefix(replyTo, equeue.ReplyTopicPrefix)
	if ns, id, ok := strings.Cut(rest, equeue.NamespaceSeparator); ok {
		return ns, id, true
	}
	return "", rest, false
}

// engineReplyTopic is the engine's name of reply address replyTo of a
// request stored in engine topic requests.
func engineReplyTopic(replyTo, requests string) string {
	ns, _, qualified := strings.Cut(requests, equeue.NamespaceSeparator)
	if _, id, ok := cutNamespace(replyTo); qualified && !ok {
		return equeue.ReplyTopicPrefix + ns + equeue.NamespaceSeparator + id
	}
	return replyTo
}
