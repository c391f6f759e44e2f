package equeue_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// consumerBroker returns e in-process, or a client of a server on e whose
// token has only the consume right.
func consumerBroker(t *testing.T, e *equeue.Engine, transport string) equeue.Broker {
	t.Helper()
	if transport == "inproc" {
		return e
	}
	srv, err := remote.NewServer(e, &remote.ServerOptions{Tokens: map[string]remote.Rights{"c": remote.RightConsume}})
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	c, err := remote.Dial(lis.Addr().String(), &remote.ClientOptions{Token: "c"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// openConsumeOnly opens an in-memory engine with opts and returns it with
// a broker that reaches it over transport with consume rights only (see
// consumerBroker); over "cluster" the engine is the leader's and every
// node's server takes only the consume token.
func openConsumeOnly(t *testing.T, transport string, opts *equeue.Options) (*equeue.Engine, equeue.Broker) {
	t.Helper()
	if transport == clusterTransport {
		c := newClusterRig(t, opts, &remote.ServerOptions{Tokens: map[string]remote.Rights{"c": remote.RightConsume}}, false)
		return c.leaderEngine(), c.dial(&remote.ClientOptions{Token: "c"})
	}
	e, _ := openEngine(t, "memory", opts)
	return e, consumerBroker(t, e, transport)
}

// engineState is what a refused call must leave unchanged: every topic and
// the end of each of its queues.
func engineState(t *testing.T, e *equeue.Engine) map[string][]int64 {
	t.Helper()
	ts, err := e.Topics(context.Background())
	require.NoError(t, err)
	out := make(map[string][]int64, len(ts))
	for _, ti := range ts {
		for _, q := range ti.Queues {
			out[ti.Name] = append(out[ti.Name], q.MaxOffset)
		}
	}
	return out
}

// joinAndPull joins member to group on topic and pulls the topic's queue 0
// from offset 0 as that member.
func joinAndPull(t *testing.T, b equeue.Broker, group, member, topic string) (equeue.Grant, equeue.PullResult) {
	t.Helper()
	ctx := ctxT(t)
	a, err := b.JoinGroup(ctx, &equeue.JoinRequest{Group: group, Member: member,
		Subscriptions: []equeue.Subscription{{Topic: topic}, {Topic: equeue.RetryTopic(group)}}})
	require.NoError(t, err)
	var g equeue.Grant
	for _, q := range a.Queues {
		if q.Topic == topic && q.Queue == 0 {
			g = q
		}
	}
	require.Equal(t, topic, g.Topic, "member owns %s/0", topic)
	res, err := b.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: 0, Group: group, Member: member, Epoch: g.Epoch})
	require.NoError(t, err)
	return g, res
}

func grantOf(t *testing.T, b equeue.Broker, group, member, topic string) equeue.Grant {
	t.Helper()
	a, err := b.Heartbeat(ctxT(t), &equeue.HeartbeatRequest{Group: group, Member: member, KnownVersion: -1})
	require.NoError(t, err)
	for _, q := range a.Queues {
		if q.Topic == topic {
			return q
		}
	}
	t.Fatalf("%s owns no queue of %s", member, topic)
	return equeue.Grant{}
}

// Scenario 6: a consumer (a consume-only token over remote) cannot create
// topics, inject into another group's retry topic, forge an origin, or
// write dead letters; every refused call changes nothing.
func TestSendBack_RightsHold(t *testing.T) {
	forTransports(t, testSendBack_RightsHold)
}

func testSendBack_RightsHold(t *testing.T, tr string) {
	ctx := ctxT(t)
	e, b := openConsumeOnly(t, tr, &equeue.Options{AutoCreateTopics: true})
	require.NoError(t, e.CreateTopic(ctx, "orders", 1))
	require.NoError(t, e.CreateTopic(ctx, "billing", 1))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte("real order")})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "billing", Body: []byte("real bill")})
	require.NoError(t, err)
	// The victim group exists, with its retry topic.
	_, _ = joinAndPull(t, e, "billing", "victim", "billing")

	g, res := joinAndPull(t, b, "og", "m", "orders")
	require.Len(t, res.Messages, 1)
	before := engineState(t, e)

	forged := &equeue.Message{Body: []byte("forged"), Properties: map[string]string{equeue.SysOriginTopic: "orders"}}
	for _, topic := range []string{
		equeue.RetryTopic("nobody"), equeue.DLQTopic("nobody"), // would create topics
		equeue.RetryTopic("billing"),                   // another group's retry topic
		equeue.RetryTopic("og"), equeue.DLQTopic("og"), // its own: only through SendBack
	} {
		_, err := b.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{forged}})
		require.Error(t, err, "append to %s", topic)
		if tr == "inproc" {
			assert.ErrorIs(t, err, equeue.ErrInternalTopic, topic)
		} else {
			assert.ErrorIs(t, err, remote.ErrPermissionDenied, "consume does not imply produce: %s", topic)
		}
		_, err = b.Route(ctx, topic)
		if topic != equeue.RetryTopic("billing") && topic != equeue.RetryTopic("og") {
			assert.Error(t, err, "route to a missing %s", topic)
		}
	}
	// Joining with a subscription to an internal topic creates nothing.
	_, err = b.JoinGroup(ctx, &equeue.JoinRequest{Group: "og2", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: equeue.DLQTopic("someone")}}})
	assert.Error(t, err)
	if tr == "remote" { // no topic creation or produce through consume rights
		_, err = b.Append(ctx, &equeue.AppendRequest{Topic: "orders", Messages: []*equeue.Message{forged}})
		assert.ErrorIs(t, err, remote.ErrPermissionDenied)
		_, err = b.Append(ctx, &equeue.AppendRequest{Topic: "fresh", Messages: []*equeue.Message{forged}})
		assert.ErrorIs(t, err, remote.ErrPermissionDenied)
		for _, name := range []string{"fresh", equeue.RetryTopic("nobody")} {
			assert.ErrorIs(t, b.(*remote.Client).CreateTopic(ctx, name, 1), remote.ErrPermissionDenied, name)
		}
	}

	// Send-backs that name what the member did not pull, or does not own.
	billing := grantOf(t, e, "billing", "victim", "billing")
	for name, req := range map[string]*equeue.SendBackRequest{
		"another group":    {Group: "billing", Member: "m", Grant: billing, Offset: 0},
		"a foreign queue":  {Group: "og", Member: "m", Grant: billing, Offset: 0},
		"a stale epoch":    {Group: "og", Member: "m", Grant: equeue.Grant{QueueRef: g.QueueRef, Epoch: g.Epoch + 7}, Offset: 0},
		"not pulled yet":   {Group: "og", Member: "m", Grant: g, Offset: 1},
		"a foreign retry":  {Group: "og", Member: "m", Grant: equeue.Grant{QueueRef: equeue.QueueRef{Topic: equeue.RetryTopic("billing")}, Epoch: g.Epoch}, Offset: 0},
		"another member":   {Group: "billing", Member: "victim", Grant: billing, Offset: 5},
		"a negative delay": {Group: "og", Member: "m", Grant: g, Offset: 0, Delay: -time.Second},
	} {
		_, err := b.SendBack(ctx, req)
		assert.Error(t, err, name)
	}
	_, err = b.SendBack(ctx, &equeue.SendBackRequest{Group: "og", Member: "m", Grant: g, Offset: 1})
	assert.ErrorIs(t, err, equeue.ErrNotPulled)
	assert.Equal(t, before, engineState(t, e), "refused calls change nothing")

	// What the member pulled goes back as stored: body and origin are the
	// engine's, the attempt count at least one above the stored one.
	sb, err := b.SendBack(ctx, &equeue.SendBackRequest{Group: "og", Member: "m", Grant: g, Offset: 0, Cause: "boom"})
	require.NoError(t, err)
	assert.Equal(t, equeue.RetryTopic("og"), sb.Topic)
	assert.Equal(t, 1, sb.Attempts)
	rg := grantOf(t, e, "og", "m", equeue.RetryTopic("og"))
	rr, err := b.Pull(ctx, &equeue.PullRequest{Topic: rg.Topic, Group: "og", Member: "m", Epoch: rg.Epoch})
	require.NoError(t, err)
	require.Len(t, rr.Messages, 1)
	rm := rr.Messages[0]
	assert.Equal(t, "real order", string(rm.Body))
	assert.Equal(t, "orders", rm.SysProperty(equeue.SysOriginTopic))
	assert.Equal(t, "0", rm.SysProperty(equeue.SysOriginOffset))
	assert.Equal(t, "boom", rm.SysProperty(equeue.SysLastError))
	assert.Equal(t, 1, rm.Attempt)

	// From the retry topic to the dead letters: the origin is kept.
	sb, err = b.SendBack(ctx, &equeue.SendBackRequest{Group: "og", Member: "m", Grant: rg, Offset: rm.Offset, DeadLetter: true})
	require.NoError(t, err)
	assert.Equal(t, equeue.DLQTopic("og"), sb.Topic)
	assert.Equal(t, 2, sb.Attempts)
	dls, err := e.DeadLetters(ctx, "og", 0, 10)
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.Equal(t, "orders", dls[0].Message.Topic)
	assert.Equal(t, int64(0), dls[0].Message.Offset)
	assert.Equal(t, "real order", string(dls[0].Message.Body))
	assert.Equal(t, 2, dls[0].Attempts)
}

// A send-back whose store write fails is "not stored": nothing lands in
// the retry topic, and the same send-back succeeds once the store does.
func TestSendBack_StoreFailure(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	g, res := joinAndPull(t, e, "g", "m", "t")
	require.Len(t, res.Messages, 1)
	req := &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Cause: "fail"}
	fs.FailWrites(1)
	_, err = e.SendBack(ctx, req)
	require.ErrorIs(t, err, faultstore.ErrInjected)
	info, err := e.Topic(ctx, equeue.RetryTopic("g"))
	require.NoError(t, err)
	assert.Equal(t, int64(0), info.Queues[0].MaxOffset, "not stored")
	_, err = e.SendBack(ctx, req)
	require.NoError(t, err)
	info, err = e.Topic(ctx, equeue.RetryTopic("g"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), info.Queues[0].MaxOffset)
}
