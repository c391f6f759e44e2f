package remote_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/crashsim"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// The engine's counters and store size read over the wire match the
// engine's own, and need the admin right.
func TestClient_EngineStatsMatchesTheEngine(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{ID: "a", Body: make([]byte, 4096)}, {ID: "b"}}})
	require.NoError(t, err)
	got, err := c.EngineStats(ctx)
	require.NoError(t, err)
	want := e.Stats()
	assert.Positive(t, got.StoreBytes)
	assert.Equal(t, int64(2), got.DedupIDs)
	assert.Equal(t, want, got)

	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{"r": remote.RightConsume}})
	rc := dial(t, s.addr, &remote.ClientOptions{Token: "r"})
	_, err = rc.EngineStats(ctx)
	assert.ErrorIs(t, err, remote.ErrPermissionDenied)
}

// noSpaceStore refuses every write of records with store.ErrNoSpace, as a
// Badger store on a nearly full disk does.
type noSpaceStore struct{ equeue.Store }

func (s noSpaceStore) Write(b *store.Batch) error {
	if len(b.Entries) > 0 {
		return fmt.Errorf("%w: injected", store.ErrNoSpace)
	}
	return s.Store.Write(b)
}

// A send refused for a full disk matches ErrNoSpace on the client too, and
// the refusal is counted in the stats read over the wire.
func TestClient_NoSpaceOverTheWire(t *testing.T) {
	ctx := ctxT(t)
	e, c := setup(t, &equeue.Options{Store: noSpaceStore{store.NewMemory()}})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p, err := equeue.NewProducer(c, nil)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.ErrorIs(t, err, equeue.ErrNoSpace)
	got, err := c.EngineStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), got.NoSpaceRefusals)
	assert.Equal(t, e.Stats(), got)
}

// A dedup group the engine's open found unreadable is counted over the
// wire as in the engine.
func TestClient_EngineStatsCountLostDedupGroups(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	for i := range 20 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: fmt.Sprintf("%01500d", i), Body: []byte("x")}}})
		require.NoError(t, err)
	}
	require.NoError(t, e.Close())
	crashsim.CutValueLogTail(t, dir, 20*3000, 3300) // the long IDs' groups are in the value log
	e, err = equeue.Open(dir, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.Positive(t, e.Stats().LostDedupGroups)
	c := dial(t, startServer(t, e, "", nil).addr, nil)
	got, err := c.EngineStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, e.Stats().LostDedupGroups, got.LostDedupGroups)
}

// fixedStats is an engine backend whose Stats are set by the test.
type fixedStats struct {
	*equeue.Engine
	st equeue.Stats
}

func (f fixedStats) Stats() equeue.Stats { return f.st }

// Every field of equeue.Stats crosses the wire: each is set to its own
// non-zero value, so a field the protocol does not carry (as a counter added
// to Stats later) reads as zero on the client and fails the comparison.
func TestClient_EngineStatsCarriesEveryField(t *testing.T) {
	ctx := ctxT(t)
	var want equeue.Stats
	v := reflect.ValueOf(&want).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Uint64:
			f.SetUint(uint64(1000 + i))
		case reflect.Int64:
			f.SetInt(int64(1000 + i))
		default:
			t.Fatalf("Stats.%s is a %s: give it a value here and carry it over the wire", v.Type().Field(i).Name, f.Kind())
		}
	}
	srv, err := remote.NewBackendServer(fixedStats{Engine: openEngine(t, nil), st: want}, nil)
	require.NoError(t, err)
	c := dial(t, serve(t, srv, "").addr, nil)
	got, err := c.EngineStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// The same through the Backend form that reports them with an error.
	srv, err = remote.NewBackendServer(fixedEngineStats{fixedStats{Engine: openEngine(t, nil), st: want}}, nil)
	require.NoError(t, err)
	c = dial(t, serve(t, srv, "").addr, nil)
	got, err = c.EngineStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, want, got)
}

// fixedEngineStats reports its Stats as a cluster node does.
type fixedEngineStats struct{ fixedStats }

func (f fixedEngineStats) EngineStats(context.Context) (equeue.Stats, error) { return f.st, nil }

// The engine's counters and store size are the whole engine's, every
// namespace's together, and no namespace has counters of its own: a token
// scoped to a namespace, even with the admin right, is refused them with
// ErrPermissionDenied (gRPC PermissionDenied), as /metrics refuses it,
// while the whole engine's admin token reads them. Before, the scoped call
// was answered Unimplemented, which read as an older broker.
func TestClient_EngineStatsRefuseANamespaceToken(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := namespaceServer(t, e)
	_, err := dial(t, s.addr, &remote.ClientOptions{Token: "tok-a"}).EngineStats(ctx)
	require.Error(t, err)
	assert.ErrorIs(t, err, remote.ErrPermissionDenied, "%v", err)
	assert.Equal(t, codes.PermissionDenied, grpcCode(err), "%v", err)
	assert.Contains(t, err.Error(), "tenant-a")

	got, err := dial(t, s.addr, &remote.ClientOptions{Token: "tok-root"}).EngineStats(ctx)
	require.NoError(t, err)
	assert.Equal(t, e.Stats(), got)
}
