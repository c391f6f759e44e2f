package equeue_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A requester on a namespace gets the reply of a service that consumes the
// namespace's topic on the engine itself (the default namespace, which
// sees it as "tenant:rpc"): the request names the reply topic as the
// requester's namespace does ("%REPLY%<id>"), and Reply finds it under the
// engine's name ("%REPLY%tenant:<id>"). Before, the reply went to a topic
// of the default namespace that does not exist, Reply returned nil and the
// request timed out. A requester on the engine sending to the namespaced
// topic still gets its reply from the same service.
func TestRequest_EngineServiceRepliesIntoANamespace(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		e, b := openOver(t, tr, "memory", nil)
		ctx := ctxT(t)
		ns, err := e.Namespace("tenant")
		require.NoError(t, err)
		require.NoError(t, ns.CreateTopic(ctx, "rpc", 1))
		replier(t, b, "tenant:rpc", nil) // the default namespace's service

		rctx, cancel := context.WithTimeout(ctx, 20*time.Second) // a bound, not a measure: the reply comes at once
		defer cancel()
		p := newProducer(t, ns, nil)
		rep, err := p.Request(rctx, &equeue.Message{Topic: "rpc", Body: []byte("from tenant")})
		require.NoError(t, err)
		assert.Equal(t, "re:from tenant", string(rep.Body))

		pe := newProducer(t, e, nil)
		rep, err = pe.Request(rctx, &equeue.Message{Topic: "tenant:rpc", Body: []byte("from the engine")})
		require.NoError(t, err)
		assert.Equal(t, "re:from the engine", string(rep.Body))
	})
}

// A request sent through a namespace cannot name a reply topic outside it:
// its reply address is the namespace's, whatever the sender wrote (a
// remote client sends system properties as it likes). Before, a tenant
// that wrote the reply topic of the default namespace (or of another
// namespace) into its request had a service consuming the tenant's topic
// on the engine write the reply there.
func TestRequest_NamespaceRequestCannotReplyOutside(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "rpc", 1))
	victims := []string{equeue.ReplyTopicPrefix + "victim", equeue.ReplyTopicPrefix + "other:victim"}
	for _, v := range victims {
		_, err := e.Route(ctx, v) // a requester's reply topic outside the tenant
		require.NoError(t, err)
	}
	for _, v := range victims {
		m := &equeue.Message{Body: []byte("forged")}
		m.SetSysProperties(map[string]string{equeue.SysReplyTo: v, equeue.SysCorrelationID: "c1"})
		_, err := ns.Append(ctx, &equeue.AppendRequest{Topic: "rpc", Messages: []*equeue.Message{m}})
		require.NoError(t, err)
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "tenant:rpc", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, len(victims))
	p := newProducer(t, e, nil) // the service, on the engine itself
	for _, req := range res.Messages {
		_ = equeue.Reply(ctx, p, req, []byte("answer"), nil)
	}
	for _, v := range victims {
		got, err := e.Pull(ctx, &equeue.PullRequest{Topic: v, Max: 10})
		require.NoError(t, err)
		assert.Empty(t, got.Messages, "a reply reached %s", v)
	}
}

// pullOne long-polls topic on e until it holds a message and returns it.
func pullOne(ctx context.Context, t *testing.T, e *equeue.Engine, topic string) *equeue.Message {
	t.Helper()
	for {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Max: 1, Wait: 5 * time.Second})
		require.NoError(t, err)
		if len(res.Messages) > 0 {
			return res.Messages[0]
		}
	}
}

// A producer on a Namespace view answers a request of that namespace that
// a service consumed on the engine, whose reply address is the engine's
// name of the requester's reply topic ("%REPLY%tenant:<id>"). Before, the
// view qualified it again ("%REPLY%tenant:tenant:<id>"), Reply returned
// ErrInvalidName and the request timed out.
func TestReply_NamespaceProducerAnswersARequestConsumedOnTheEngine(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "rpc", 1))
	requester := newProducer(t, ns, nil)
	type answer struct {
		rep *equeue.Message
		err error
	}
	got := make(chan answer, 1)
	go func() {
		rep, err := requester.Request(ctx, &equeue.Message{Topic: "rpc", Body: []byte("ping")})
		got <- answer{rep, err}
	}()
	req := pullOne(ctx, t, e, "tenant:rpc")
	require.True(t, strings.HasPrefix(req.SysProperty(equeue.SysReplyTo), equeue.ReplyTopicPrefix+"tenant:"), req.SysProperty(equeue.SysReplyTo))

	replies := newProducer(t, ns, nil)
	require.NoError(t, equeue.Reply(ctx, replies, req, []byte("pong"), nil))
	select {
	case a := <-got:
		require.NoError(t, a.err)
		assert.Equal(t, "pong", string(a.rep.Body))
	case <-ctx.Done():
		t.Fatal("the request got no reply")
	}
}

// A producer on a Namespace view refuses a reply whose address names
// another namespace's reply topic, however the handler received the
// request (on the engine or through the view), with ErrOutsideNamespace;
// nothing reaches the other namespace.
func TestReply_NamespaceProducerRefusesAReplyTopicOutside(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	ns, err := e.Namespace("tenant")
	require.NoError(t, err)
	require.NoError(t, ns.CreateTopic(ctx, "rpc", 1))
	victim := equeue.ReplyTopicPrefix + "other:victim"
	_, err = e.Route(ctx, victim)
	require.NoError(t, err)
	m := &equeue.Message{Body: []byte("forged")}
	m.SetSysProperties(map[string]string{equeue.SysReplyTo: victim, equeue.SysCorrelationID: "c1"})
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "tenant:rpc", Messages: []*equeue.Message{m}})
	require.NoError(t, err)

	onEngine, err := e.Pull(ctx, &equeue.PullRequest{Topic: "tenant:rpc", Max: 1})
	require.NoError(t, err)
	throughView, err := ns.Pull(ctx, &equeue.PullRequest{Topic: "rpc", Max: 1})
	require.NoError(t, err)
	replies := newProducer(t, ns, nil)
	for _, req := range append(onEngine.Messages, throughView.Messages...) {
		err := equeue.Reply(ctx, replies, req, []byte("answer"), nil)
		assert.ErrorIs(t, err, equeue.ErrOutsideNamespace, "reply to %s", req.SysProperty(equeue.SysReplyTo))
	}
	got, err := e.Pull(ctx, &equeue.PullRequest{Topic: victim, Max: 10})
	require.NoError(t, err)
	assert.Empty(t, got.Messages, "a reply reached %s", victim)
}
