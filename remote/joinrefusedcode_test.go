package remote_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// failJoins is a backend whose joins fail with err (or, when err is nil,
// go to the engine).
type failJoins struct {
	*equeue.Engine
	err error
}

func (b *failJoins) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	if b.err != nil {
		return equeue.Assignment{}, b.err
	}
	return b.Engine.JoinGroup(ctx, req)
}

// A backend's join error that names no sentinel and is not marked as a
// refusal crosses the wire as Internal, and the client does not take it
// for a refusal (a Start leaves for it: the member may have been made).
func TestJoinGroup_UnmarkedBackendErrorIsNoRefusal(t *testing.T) {
	e := openEngine(t, nil)
	srv, err := remote.NewBackendServer(&failJoins{Engine: e, err: errors.New("backend broke")}, nil)
	require.NoError(t, err)
	c := dial(t, serve(t, srv, "").addr, nil)
	_, err = c.JoinGroup(ctxT(t), &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.Error(t, err)
	assert.Equal(t, codes.Internal, status.Code(err))
	assert.NotErrorIs(t, err, equeue.ErrJoinRefused)
}

// The engine refuses a join whose group it could not store, for a store
// error that names no sentinel: the refusal (equeue.ErrJoinRefused) is
// the one sentinel it matches. It crosses the wire marked as a refusal,
// so that the client sends no leave, but with the code of what failed
// (Internal), not FailedPrecondition, which claimed the broker's state
// refused the join. Before, its code was FailedPrecondition.
func TestJoinGroup_RefusalWithoutCauseKeepsTheCodeOfItsFailure(t *testing.T) {
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	c := dial(t, startServer(t, e, "", nil).addr, nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	fs.OnWrite(func(*store.Batch) error { return errors.New("disk on fire") })
	t.Cleanup(func() { fs.OnWrite(nil) })
	inProcess, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.Error(t, err, "%v", inProcess)
	require.ErrorIs(t, err, equeue.ErrJoinRefused)

	_, err = c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.Error(t, err)
	assert.ErrorIs(t, err, equeue.ErrJoinRefused, "the engine added no member")
	assert.Equal(t, codes.Internal, status.Code(err), "%v", err)
}

// A join the server refuses before the engine sees it (a consume-only
// token subscribing to a topic that does not exist) is marked as a
// refusal, as the engine's own are.
func TestJoinGroup_ServerRefusalIsMarked(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, &equeue.Options{AutoCreateTopics: true})
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{"c": remote.RightConsume}})
	c := dial(t, s.addr, &remote.ClientOptions{Token: "c"})
	_, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "fresh"}}})
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.ErrorIs(t, err, equeue.ErrJoinRefused)
}
