package remote_test

import (
	"testing"

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
