package remote_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// A failed fsync on the server's engine reaches a remote sender as on the
// engine: the send it covered is unknown, the next is refused as
// ErrStoreFailed (not stored).
func TestErrors_FailedFsyncOverTheWire(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	_, c := setup(t, &equeue.Options{Store: fs})
	require.NoError(t, c.CreateTopic(ctx, "t", 1))
	fs.FailSyncs(1)
	_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("b")}}})
	require.ErrorIs(t, err, equeue.ErrStoreFailed)
	require.NotErrorIs(t, err, equeue.ErrIndeterminate)
}

// Once a failed fsync stopped the engine's writes, the server's health
// service answers NOT_SERVING (for the server and the Broker service).
func TestServer_HealthFollowsAStoreFailure(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s := startServer(t, e, "", nil)
	health := healthpb.NewHealthClient(rawConn(t, s.addr))
	status := func(svc string) healthpb.HealthCheckResponse_ServingStatus {
		resp, err := health.Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		require.NoError(t, err)
		return resp.GetStatus()
	}
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, status(""))
	fs.FailSyncs(1)
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("a")}}})
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	for _, svc := range []string{"", "equeue.v1.Broker"} {
		require.Eventually(t, func() bool { return status(svc) == healthpb.HealthCheckResponse_NOT_SERVING },
			10*time.Second, 20*time.Millisecond, "health of %q", svc)
	}
}
