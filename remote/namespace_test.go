package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// namespaceServer serves e with three tokens: one scoped to tenant-a, one
// to tenant-b, and one for the whole engine.
func namespaceServer(t *testing.T, e *equeue.Engine) *server {
	t.Helper()
	return startServer(t, e, "", &remote.ServerOptions{
		Tokens:          map[string]remote.Rights{"tok-a": remote.RightAll, "tok-b": remote.RightAll, "tok-root": remote.RightAll},
		TokenNamespaces: map[string]string{"tok-a": "tenant-a", "tok-b": "tenant-b"},
	})
}

// tenantState is everything stored of tenant-b, read through the engine.
type tenantState struct {
	Topics  []equeue.TopicInfo
	Groups  []equeue.GroupInfo
	Bodies  map[string][]string // topic/queue -> bodies
	Delayed int
	DLQ     []string
}

func stateOf(t *testing.T, e *equeue.Engine, ns string) tenantState {
	t.Helper()
	ctx := ctxT(t)
	v, err := e.Namespace(ns)
	require.NoError(t, err)
	var s tenantState
	s.Topics, err = v.Topics(ctx)
	require.NoError(t, err)
	s.Groups, err = v.Groups(ctx)
	require.NoError(t, err)
	for i := range s.Groups {
		s.Groups[i].Members = nil // liveness is not state a call could change
	}
	s.Bodies = map[string][]string{}
	for _, ti := range s.Topics {
		for _, q := range ti.Queues {
			res, err := v.Pull(ctx, &equeue.PullRequest{Topic: ti.Name, Queue: q.ID, Offset: q.MinOffset, Max: 1000})
			require.NoError(t, err)
			for _, m := range res.Messages {
				s.Bodies[fmt.Sprintf("%s/%d", ti.Name, q.ID)] = append(s.Bodies[fmt.Sprintf("%s/%d", ti.Name, q.ID)], string(m.Body))
			}
		}
	}
	d, err := v.Delayed(ctx, 0)
	require.NoError(t, err)
	s.Delayed = d.Pending
	dls, err := v.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	for _, dl := range dls {
		s.DLQ = append(s.DLQ, fmt.Sprintf("%s redriven=%v", dl.Message.Body, dl.Redriven))
	}
	return s
}

// populate gives namespace client c a topic with messages, a group that
// consumed them with a dead letter, and a delayed message.
func populate(t *testing.T, c *remote.Client, secret string) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, c.CreateTopicWith(ctx, "orders", equeue.TopicOptions{Queues: 2, Limits: equeue.TopicLimits{MaxMessages: 1000}}))
	p := newProducer(t, c)
	for i := 0; i < 6; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "orders", Keys: []string{fmt.Sprint(i)}, Body: []byte(fmt.Sprintf("%s-%d", secret, i))})
		require.NoError(t, err)
	}
	_, err := p.Send(ctx, &equeue.Message{Topic: "orders", Body: []byte(secret + "-later"), Delay: time.Hour})
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[string]bool{}
	cons := startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "orders"}}, MaxAttempts: 1,
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			seen[string(m.Body)] = true
			mu.Unlock()
			if m.Topic != "orders" {
				return fmt.Errorf("topic %q", m.Topic)
			}
			if strings.HasSuffix(string(m.Body), "-0") {
				return errors.New("poison")
			}
			return nil
		}})
	eventually(t, 20*time.Second, func() bool {
		dls, err := c.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		g, gerr := c.Group(ctx, "g")
		var committed int64
		for _, q := range g.Queues {
			committed += max(q.Committed, 0)
		}
		mu.Lock()
		defer mu.Unlock()
		return err == nil && gerr == nil && len(dls) == 1 && len(seen) == 6 && committed == 6
	}, "the group consumed %s and dead-lettered one", secret)
	require.NoError(t, cons.Close())
}

// fill sets every string field of m (nested messages and lists included)
// to s and every bool to true, so each request names s wherever it can.
func fill(m protoreflect.Message, s string, depth int) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		f := fields.Get(i)
		switch {
		case f.IsMap():
		case f.IsList():
			l := m.Mutable(f).List()
			switch f.Kind() {
			case protoreflect.StringKind:
				l.Append(protoreflect.ValueOfString(s))
			case protoreflect.MessageKind:
				if depth < 3 {
					el := l.NewElement()
					fill(el.Message(), s, depth+1)
					l.Append(el)
				}
			}
		case f.Kind() == protoreflect.StringKind:
			m.Set(f, protoreflect.ValueOfString(s))
		case f.Kind() == protoreflect.BoolKind:
			m.Set(f, protoreflect.ValueOfBool(true))
		case f.Kind() == protoreflect.MessageKind && f.Message().FullName() != "google.protobuf.Duration" && depth < 3:
			fill(m.Mutable(f).Message(), s, depth+1)
		}
	}
}

// TestNamespace_TokenCannotReachAnotherNamespace calls every RPC of the
// Broker service, enumerated from its descriptor, with a token of
// tenant-a and names aimed at tenant-b, and checks that no answer shows
// tenant-b and that tenant-b's state is unchanged.
func TestNamespace_TokenCannotReachAnotherNamespace(t *testing.T) {
	e := openEngine(t, nil)
	s := namespaceServer(t, e)
	b := dial(t, s.addr, &remote.ClientOptions{Token: "tok-b"})
	populate(t, b, "secret-b")
	before := stateOf(t, e, "tenant-b")
	require.NotEmpty(t, before.Topics)
	require.Equal(t, 1, before.Delayed)
	require.Len(t, before.DLQ, 1)

	conn, err := grpc.NewClient(s.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	call := func(token string, method protoreflect.MethodDescriptor, name string) (string, error) {
		return callRPC(t, conn, token, method, name)
	}

	svc := pb.File_equeue_v1_equeue_proto.Services().ByName("Broker")
	require.NotNil(t, svc)
	methods := svc.Methods()
	require.Equal(t, len(pb.Broker_ServiceDesc.Methods)+len(pb.Broker_ServiceDesc.Streams), methods.Len(), "the descriptor lists every RPC the server registers")
	// Names a caller of tenant-a might try: its own (which map into
	// tenant-a), tenant-b's qualified names, and tenant-b's internal topics.
	names := []string{"orders", "g", "%DLQ%g", "%RETRY%g", "tenant-b:orders", "tenant-b:g", "%DLQ%tenant-b:g", "%RETRY%tenant-b:g", ""}
	// Tenant-a first creates what it can, so list calls have something of
	// its own to show.
	for _, name := range []string{"orders", "g"} {
		_, _ = call("tok-a", svc.Methods().ByName("CreateTopic"), name)
	}
	answered := map[string]int{}
	for i := 0; i < methods.Len(); i++ {
		m := methods.Get(i)
		for _, name := range names {
			text, err := call("tok-a", m, name)
			if err != nil {
				text = err.Error()
			} else {
				answered[string(m.Name())]++
			}
			assert.NotContains(t, text, "secret-b", "%s(%q) shows tenant-b's messages", m.Name(), name)
			assert.NotContains(t, text, "tenant-a:", "%s(%q) shows an engine name, not the namespace's", m.Name(), name)
			if !strings.Contains(name, "tenant-b") { // else an error may quote the name given
				assert.NotContains(t, text, "tenant-b", "%s(%q) shows tenant-b's names", m.Name(), name)
			}
		}
	}
	assert.Equal(t, before, stateOf(t, e, "tenant-b"), "no call of tenant-a changed tenant-b")
	for _, m := range []string{"ListTopics", "ListGroups", "ListDelayed", "Route", "PullMany", "AppendStream"} {
		assert.Positive(t, answered[m], "%s answered tenant-a at least once, so its answer was checked", m)
	}

	// The same harness sees tenant-b with the whole-engine token: the
	// checks above would catch a leak.
	text, err := call("tok-root", svc.Methods().ByName("ListTopics"), "")
	require.NoError(t, err)
	assert.Contains(t, text, "tenant-b:orders")
	text, err = call("tok-b", svc.Methods().ByName("ListDelayed"), "")
	require.NoError(t, err)
	assert.Regexp(t, `pending:\s*1\b`, text)
}

func TestNamespace_SameNamesOverRemote(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := namespaceServer(t, e)
	a := dial(t, s.addr, &remote.ClientOptions{Token: "tok-a"})
	b := dial(t, s.addr, &remote.ClientOptions{Token: "tok-b"})
	populate(t, a, "secret-a")
	populate(t, b, "secret-b")
	for _, c := range []struct {
		cl     *remote.Client
		secret string
	}{{a, "secret-a"}, {b, "secret-b"}} {
		ts, err := c.cl.Topics(ctx)
		require.NoError(t, err)
		var names []string
		for _, ti := range ts {
			names = append(names, ti.Name)
		}
		assert.ElementsMatch(t, []string{"orders", "%DLQ%g", "%RETRY%g"}, names)
		dls, err := c.cl.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		require.NoError(t, err)
		require.Len(t, dls, 1)
		assert.Equal(t, c.secret+"-0", string(dls[0].Message.Body))
		assert.Equal(t, "orders", dls[0].Message.Topic)
		gs, err := c.cl.Groups(ctx)
		require.NoError(t, err)
		require.Len(t, gs, 1)
		assert.Equal(t, "g", gs[0].Name)
	}
	// Redriving in tenant-a sends the dead letter back to tenant-a's group,
	// through its retry topic; in tenant-b, with ToTopic, to tenant-b's
	// topic.
	n, err := a.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ti, err := a.Topic(ctx, equeue.RetryTopic("g"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), ti.Messages)
	ti, err = a.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Equal(t, int64(6), ti.Messages)
	n, err = b.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	ti, err = b.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Equal(t, int64(7), ti.Messages)
	ti, err = b.Topic(ctx, equeue.RetryTopic("g"))
	require.NoError(t, err)
	assert.Zero(t, ti.Messages)
	ti, err = a.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Equal(t, int64(6), ti.Messages, "tenant-b's redrive stays in tenant-b")

	_, err = remote.NewServer(e, &remote.ServerOptions{Tokens: map[string]remote.Rights{"x": remote.RightAll}, TokenNamespaces: map[string]string{"y": "a"}})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions, "a scoped token must be a token")
	_, err = remote.NewServer(e, &remote.ServerOptions{Tokens: map[string]remote.Rights{"x": remote.RightAll}, TokenNamespaces: map[string]string{"x": "a:b"}})
	assert.ErrorIs(t, err, equeue.ErrInvalidOptions, "a namespace must be a valid name")
}

// A consumer with a namespace token whose client cannot receive a stored
// message dead-letters it and goes on, as on the whole engine: the
// ErrMessageTooLarge it gets names the queue by the namespace's name (the
// one its grant has), not the engine's.
func TestNamespace_ConsumerDeadLettersAMessageItCannotReceive(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := namespaceServer(t, e)
	a, err := e.Namespace("tenant-a")
	require.NoError(t, err)
	require.NoError(t, a.CreateTopic(ctx, "t", 1))
	for _, n := range []int{10, 2 << 20, 20} {
		_, err := a.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: make([]byte, n)}}})
		require.NoError(t, err)
	}
	small := dial(t, s.addr, &remote.ClientOptions{Token: "tok-a", MaxMessageBytes: 1 << 20})

	_, err = small.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 1})
	var big *equeue.MessageTooLargeError
	require.ErrorAs(t, err, &big)
	assert.Equal(t, equeue.QueueRef{Topic: "t", Queue: 0}, big.QueueRef, "the namespace's name of the queue")
	assert.NotContains(t, err.Error(), "tenant-a")

	got := make(chan int, 4)
	c, err := equeue.NewConsumer(small, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(_ context.Context, m *equeue.Message) error { got <- len(m.Body); return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer func() { _ = c.Close() }()
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, want := range []int{10, 20} {
		select {
		case n := <-got:
			assert.Equal(t, want, n)
		case <-wait.Done():
			t.Fatalf("the consumer is stuck before the %d-byte message", want)
		}
	}
	require.NoError(t, c.Close())
	dead, err := a.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 10})
	require.NoError(t, err)
	require.Len(t, dead, 1)
	assert.Equal(t, int64(1), dead[0].Message.Offset)
	assert.NotContains(t, dead[0].LastError, "tenant-a")
}

// callRPC calls method on conn with token, its request filled with name
// (fill), and returns the answer as text: every answer of a stream.
func callRPC(t *testing.T, conn *grpc.ClientConn, token string, method protoreflect.MethodDescriptor, name string) (string, error) {
	t.Helper()
	in, err := protoregistry.GlobalTypes.FindMessageByName(method.Input().FullName())
	require.NoError(t, err)
	out, err := protoregistry.GlobalTypes.FindMessageByName(method.Output().FullName())
	require.NoError(t, err)
	req, resp := in.New(), out.New()
	fill(req, name, 0)
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(ctxT(t), "authorization", "Bearer "+token), 5*time.Second)
	defer cancel()
	full := fmt.Sprintf("/%s/%s", method.Parent().FullName(), method.Name())
	if method.IsStreamingClient() {
		// One request, then every answer until the server ends the call.
		st, err := conn.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true, ServerStreams: true}, full)
		if err != nil {
			return "", err
		}
		if err := st.SendMsg(req.Interface()); err != nil {
			return "", err
		}
		if err := st.CloseSend(); err != nil {
			return "", err
		}
		var text strings.Builder
		for {
			if err := st.RecvMsg(resp.Interface()); err != nil {
				if errors.Is(err, io.EOF) {
					return text.String(), nil
				}
				return "", err
			}
			text.WriteString(prototext.Format(resp.Interface()))
		}
	}
	if err := conn.Invoke(ctx, full, req.Interface(), resp.Interface()); err != nil {
		return "", err
	}
	return prototext.Format(resp.Interface()), nil
}
