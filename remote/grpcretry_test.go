package remote_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// retryConfigScheme is the scheme of a resolver that gives its address
// with a service config asking gRPC to retry the broker's calls answered
// UNAVAILABLE: what a DNS TXT record (_grpc_config.<host>, which gRPC
// reads by default) may give any client.
const retryConfigScheme = "equeue-test-retryconfig"

const retryServiceConfig = `{"methodConfig": [{"name": [{"service": "equeue.v1.Broker"}],
	"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
	"backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}]}`

func init() { resolver.Register(retryConfigResolver{}) }

// retryConfigResolver resolves "equeue-test-retryconfig:///host:port" to
// host:port, with retryServiceConfig.
type retryConfigResolver struct{}

func (retryConfigResolver) Build(target resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	_ = cc.UpdateState(resolver.State{Addresses: []resolver.Address{{Addr: target.Endpoint()}},
		ServiceConfig: cc.ParseServiceConfig(retryServiceConfig)})
	return retryConfigResolver{}, nil
}

func (retryConfigResolver) Scheme() string                        { return retryConfigScheme }
func (retryConfigResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (retryConfigResolver) Close()                                {}

// lossKey is the metadata key of a call whose first answer loseFirst
// loses: "1" loses it, "0" (of the same length) does not.
const lossKey = "x-lose"

// loseFirst runs the first append carrying lossKey "1" and answers it
// UNAVAILABLE without details, as a proxy does whose broker's answer was
// lost on the way; it counts the attempts of such appends.
type loseFirst struct{ attempts atomic.Int32 }

func (l *loseFirst) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if info.FullMethod != pb.Broker_Append_FullMethodName || len(md.Get(lossKey)) != 1 || md.Get(lossKey)[0] != "1" {
		return handler(ctx, req)
	}
	resp, err := handler(ctx, req)
	if l.attempts.Add(1) == 1 && err == nil {
		return nil, status.Error(codes.Unavailable, "upstream answer lost")
	}
	return resp, err
}

// A service config from the resolver (DNS TXT records are read by
// default) may carry a retry policy: gRPC then sends a call answered
// UNAVAILABLE again by itself, below the client, which never sends an
// append again once it may have left. The append below was stored, and
// its answer lost: it must be ErrIndeterminate, stored once. With gRPC's
// retries on, it was sent again and stored twice; and when the retry's
// own header (grpc-previous-rpc-attempts) took its metadata over the
// broker's bound, gRPC's refusal of the retry was read as the refusal of
// a call that never left (ErrInvalidArgument, "nothing was done").
func TestClient_ResolverRetryPolicyNeverSendsACallAgain(t *testing.T) {
	for _, padded := range []bool{false, true} {
		name := "retry reaches the broker"
		if padded {
			name = "retry over the metadata bound"
		}
		t.Run(name, func(t *testing.T) {
			// No deadline: a grpc-timeout header would change the size of
			// the headers from call to call.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			require.NoError(t, e.CreateTopic(ctx, "p", 1))
			srv, err := remote.NewServer(e, &remote.ServerOptions{MaxMetadataBytes: 4 << 10})
			require.NoError(t, err)
			lose := new(loseFirst)
			gs := grpc.NewServer(append(srv.GRPCServerOptions(), grpc.ChainUnaryInterceptor(lose.intercept))...)
			remote.RegisterWithoutStreams(srv, gs) // appends are unary calls
			addr := serveOwn(t, srv, gs)
			c := dial(t, retryConfigScheme+":///"+addr, nil)
			send := func(ctx context.Context, topic, loss string, pad int) error {
				ctx = metadata.AppendToOutgoingContext(ctx, lossKey, loss, "x-pad", strings.Repeat("p", pad))
				_, err := c.Append(ctx, &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{{Body: []byte("x")}}})
				return err
			}
			pad := 0
			if padded {
				// The largest padding whose first attempt the transport
				// sends, less a margin: its retry, with the header telling
				// the attempts before (59 bytes counted), is over the bound.
				lo, hi := 0, 8<<10
				for lo < hi {
					mid := (lo + hi + 1) / 2
					if err := send(ctx, "p", "0", mid); err == nil {
						lo = mid
					} else {
						require.Contains(t, err.Error(), "header list size", "probe of %d bytes", mid)
						hi = mid - 1
					}
				}
				require.Greater(t, lo, 16)
				pad = lo - 16
			}

			err = send(ctx, "t", "1", pad)
			assert.Error(t, err, "the answer was lost")
			assert.ErrorIs(t, err, equeue.ErrIndeterminate, "%v", err)
			assert.NotErrorIs(t, err, equeue.ErrInvalidArgument, "%v", err)
			assert.Equal(t, int32(1), lose.attempts.Load(), "the append reached the broker once")
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, int64(1), info.Queues[0].MaxOffset, "stored once")
		})
	}
}
