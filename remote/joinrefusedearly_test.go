package remote_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// startRefused starts a PullConsumer of group "g" on b (the join is
// refused before the broker's join handler runs) and returns Start's
// error and how many leaves it sent.
func startRefused(t *testing.T, ctx context.Context, b equeue.Broker) (leaves int32, err error) {
	t.Helper()
	lb := &countLeaves{Broker: b}
	pc, err := equeue.NewPullConsumer(lb, equeue.PullConsumerOptions{Group: "g", ID: "p",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	err = pc.Start(ctx)
	require.Error(t, err)
	leaves = lb.leaves.Load()
	closeCtx, cancel := context.WithCancel(context.Background())
	cancel() // the consumer is closed whether or not its leave is answered
	_ = pc.CloseContext(closeCtx)
	return leaves, err
}

// assertNotJoined checks that e's group "g" has no member.
func assertNotJoined(t *testing.T, e *equeue.Engine) {
	t.Helper()
	gi, err := e.Group(ctxT(t), "g")
	if err == nil {
		assert.Empty(t, gi.Members, "no member joined")
		return
	}
	assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
}

// A join the server refuses for its token, before the join handler runs,
// added no member: its error matches equeue.ErrJoinRefused beside the
// refusal's own sentinel, and a Start sends no leave for it. Before, it
// matched the refusal's sentinel alone, and Start sent a needless leave.
func TestJoinGroup_AuthRefusalIsAJoinRefusal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		token string
		want  error
	}{
		{"unauthenticated", "", remote.ErrUnauthenticated},
		{"unknown token", "nobody", remote.ErrUnauthenticated},
		{"permission denied", "producer", remote.ErrPermissionDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{
				"producer": remote.RightProduce, "admin": remote.RightAll}})
			c := dial(t, s.addr, &remote.ClientOptions{Token: tc.token})

			_, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, equeue.ErrJoinRefused)
			assert.NotErrorIs(t, err, equeue.ErrIndeterminate)

			leaves, err := startRefused(t, ctx, c)
			assert.ErrorIs(t, err, tc.want)
			assert.ErrorIs(t, err, equeue.ErrJoinRefused)
			assert.Zero(t, leaves, "no leave after a refused join")
			assertNotJoined(t, e)
		})
	}
}

// A join whose metadata is over the broker's bound is refused by the
// client's own transport before it leaves: equeue.ErrJoinRefused beside
// remote.ErrMetadataTooLarge, and no leave.
func TestJoinGroup_OversizedMetadataIsAJoinRefusal(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	srv, err := remote.NewServer(e, &remote.ServerOptions{MaxMetadataBytes: 4 << 10})
	require.NoError(t, err)
	gs := grpc.NewServer(srv.GRPCServerOptions()...)
	srv.Register(gs)
	c := dial(t, serveOwn(t, srv, gs), &remote.ClientOptions{Token: strings.Repeat("t", 8<<10)})

	_, err = c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	assert.ErrorIs(t, err, remote.ErrMetadataTooLarge)
	assert.ErrorIs(t, err, equeue.ErrJoinRefused)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate)

	leaves, err := startRefused(t, ctx, c)
	assert.ErrorIs(t, err, remote.ErrMetadataTooLarge)
	assert.ErrorIs(t, err, equeue.ErrJoinRefused)
	assert.Zero(t, leaves, "no leave after a refused join")
	assertNotJoined(t, e)
}

// A join the server refuses as busy (its MaxInFlight held) is retried by
// the client until its context ends; when it ends before a retry left the
// client, every attempt that reached the broker was refused before it
// ran: the join added no member, and its error matches
// equeue.ErrJoinRefused beside the context's. Before, it was the
// context's alone, taken for an outcome unknown, and Start left.
func TestJoinGroup_BusyRefusalIsAJoinRefusal(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", &remote.ServerOptions{MaxInFlight: 1})
	c := dial(t, s.addr, nil)

	// Hold the only slot with an append whose store write waits.
	release := make(chan struct{})
	writing := make(chan struct{}, 1)
	fs.OnWrite(func(*store.Batch) error {
		select {
		case writing <- struct{}{}:
		default:
		}
		<-release
		return nil
	})
	held := make(chan error, 1)
	go func() {
		_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
		held <- err
	}()
	<-writing
	defer func() {
		fs.OnWrite(nil)
		close(release)
		assert.NoError(t, <-held)
	}()

	for _, via := range []string{"JoinGroup", "Start"} {
		jctx, cancel := context.WithCancel(ctx)
		remote.OnBusyRetry(cancel) // the join's context ends once a busy refusal's backoff is over
		var err error
		var leaves int32
		if via == "JoinGroup" {
			_, err = c.JoinGroup(jctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		} else {
			leaves, err = startRefused(t, jctx, c)
		}
		remote.OnBusyRetry(nil)
		cancel()
		assert.ErrorIs(t, err, context.Canceled, via)
		assert.ErrorIs(t, err, equeue.ErrJoinRefused, "%s: %v", via, err)
		assert.NotErrorIs(t, err, equeue.ErrIndeterminate, via)
		assert.Zero(t, leaves, "%s: no leave after a refused join", via)
	}
	assertNotJoined(t, e)
}
