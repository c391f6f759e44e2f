package equeue_test

import (
	"context"
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
