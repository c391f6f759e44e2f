package kafka_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

func TestMain(m *testing.M) {
	// sarama's metrics library starts one process-wide ticker that never stops.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/rcrowley/go-metrics.(*meterArbiter).tick"))
}

// openEngine opens an in-memory engine closed when the test ends.
func openEngine(t testing.TB, opts *equeue.Options) *equeue.Engine {
	t.Helper()
	var o equeue.Options
	if opts != nil {
		o = *opts
	}
	if o.Store == nil {
		o.InMemory = true
	}
	e, err := equeue.Open("", &o)
	require.NoError(t, err)
	t.Cleanup(func() {
		err := e.Close()
		if e.StoreFailure() != nil { // Close reports the failed fsync
			require.ErrorIs(t, err, equeue.ErrStoreFailed)
			return
		}
		require.NoError(t, err)
	})
	return e
}

// serve starts a Kafka listener on 127.0.0.1:0 over b, closed when the
// test ends (before the engine, whose cleanup was registered first).
func serve(t testing.TB, b kafka.Broker, opts *kafka.Options) string {
	t.Helper()
	s, err := kafka.NewServer(b, opts)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	t.Cleanup(func() {
		require.NoError(t, s.Close())
		require.ErrorIs(t, <-done, kafka.ErrServerClosed)
	})
	return lis.Addr().String()
}

// setup opens an engine with the topics given (name -> partitions) and
// serves it; it returns the engine and the listener's address.
func setup(t testing.TB, topics map[string]int) (*equeue.Engine, string) {
	t.Helper()
	e := openEngine(t, nil)
	for name, n := range topics {
		require.NoError(t, e.CreateTopic(context.Background(), name, n))
	}
	return e, serve(t, e, nil)
}

// kclient returns a franz-go client of addr closed when the test ends.
func kclient(t testing.TB, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(50 * time.Millisecond)}, opts...)
	c, err := kgo.NewClient(opts...)
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// namedCommit is an OffsetCommit that a franz-go broker (kgo.Broker.Request)
// sends at v9 at most, the last version that names topics, for the tests
// that build their commits by topic name: franz-go sends v10, which names
// them by ID only (TestOffsetCommit_V10), to a listener that serves it.
type namedCommit struct{ *kmsg.OffsetCommitRequest }

// MaxVersion caps the version sent at v9.
func (namedCommit) MaxVersion() int16 { return 9 }

// namedFetch is an OffsetFetch that a franz-go broker (kgo.Broker.Request)
// sends at v9 at most, the last version that names topics, for the tests
// that build their fetches by topic name: franz-go sends v10, which names
// them by ID only (TestOffsetFetch_V10), to a listener that serves it.
type namedFetch struct{ *kmsg.OffsetFetchRequest }

// MaxVersion caps the version sent at v9.
func (namedFetch) MaxVersion() int16 { return 9 }

// namedCommits caps a client's OffsetCommit at v9, as namedCommit does one
// request's, for the requests sent through the client (RequestWith).
func namedCommits() kgo.Opt {
	v := kversion.Stable()
	v.SetMaxKeyVersion(8, 9) // OffsetCommit
	return kgo.MaxVersions(v)
}

func kadmin(t testing.TB, addr string) *kadm.Client {
	t.Helper()
	return kadm.NewClient(kclient(t, addr))
}

// testCtx is a context that ends with the test or after a minute.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// pollN polls c until it has n records or ctx ends.
func pollN(ctx context.Context, t testing.TB, c *kgo.Client, n int) []*kgo.Record {
	t.Helper()
	var out []*kgo.Record
	for len(out) < n {
		fs := c.PollFetches(ctx)
		require.NoError(t, ctx.Err(), "got %d of %d records", len(out), n)
		fs.EachError(func(topic string, p int32, err error) {
			t.Logf("fetch error %s/%d: %v", topic, p, err)
		})
		out = append(out, fs.Records()...)
	}
	return out
}

// serveOnce serves b until the calling function's deferred cleanups run:
// it returns the address and closes the server with t.Cleanup too, but
// callers that restart the engine close it themselves first.
func serveOnce(t testing.TB, b kafka.Broker) string {
	t.Helper()
	s, err := kafka.NewServer(b, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(func() { _ = s.Close() })
	return lis.Addr().String()
}

// requester is a kgo.Client or kgo.Broker.
type requester interface {
	Request(context.Context, kmsg.Request) (kmsg.Response, error)
}

// requestJoin sends jg; a MEMBER_ID_REQUIRED answer to a join without a
// member ID (KIP-394, JoinGroup v4+) is followed by the join with the ID
// it gave, as clients do.
func requestJoin(ctx context.Context, t testing.TB, r requester, jg *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	t.Helper()
	resp, err := r.Request(ctx, jg)
	require.NoError(t, err)
	j := resp.(*kmsg.JoinGroupResponse)
	if j.ErrorCode == 79 && jg.MemberID == "" {
		again := *jg
		again.MemberID = j.MemberID
		resp, err = r.Request(ctx, &again)
		require.NoError(t, err)
		j = resp.(*kmsg.JoinGroupResponse)
	}
	return j
}
