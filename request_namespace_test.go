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
