package remote_test

import (
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/testport"
	"github.com/equeue-go/equeue/remote"
)

// drainThenBoundServer speaks just enough HTTP/2 to stand for a broker
// that goes away and comes back with a bound on call metadata. Its first
// connection takes headers of any size and, once a call's headers
// arrived, sends GOAWAY naming no stream as processed: gRPC retries the
// call by itself on a new connection (a transparent retry, which
// WithDisableRetry leaves on). Every later connection tells the bound in
// its SETTINGS, so the client's transport refuses that retry's headers.
type drainThenBoundServer struct {
	bound   uint32
	conns   atomic.Int64 // connections accepted
	drained atomic.Int64 // calls answered with GOAWAY
	later   atomic.Int64 // calls that reached a later connection
}

// start serves until the test ends and returns the address.
func (ds *drainThenBoundServer) start(t *testing.T) string {
	t.Helper()
	lis := testport.Listen(t)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			first := ds.conns.Add(1) == 1
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				ds.serve(c, first)
			}()
		}
	}()
	t.Cleanup(func() {
		_ = lis.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return lis.Addr().String()
}

// serve runs one connection until it fails or closes.
func (ds *drainThenBoundServer) serve(c net.Conn, first bool) {
	defer c.Close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(64<<10, nil)
	fr.MaxHeaderListSize = 1 << 20
	var settings []http2.Setting
	if !first {
		settings = append(settings, http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: ds.bound})
	}
	if fr.WriteSettings(settings...) != nil {
		return
	}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				err = fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				err = fr.WritePing(true, f.Data)
			}
		case *http2.MetaHeadersFrame:
			if !first {
				ds.later.Add(1)
				break
			}
			// No stream was processed: the client may send them again.
			ds.drained.Add(1)
			err = fr.WriteGoAway(0, http2.ErrCodeNo, nil)
		}
		if err != nil {
			return
		}
	}
}

// A call that gRPC retried by itself on a new connection (its first
// attempt's stream was opened, then the broker went away without
// processing it) and whose retry the client's transport refused for its
// headers did nothing: it is ErrMetadataTooLarge, a definite refusal,
// never of unknown outcome. Before, the client marked the call's stream
// opened once for all its attempts, so the first attempt's opening hid the
// retry's refusal, and a send or change read as a broken call.
func TestClient_HeadersRefusalOfATransparentRetryIsDefinite(t *testing.T) {
	for _, call := range []string{"append", "create topic"} {
		t.Run(call, func(t *testing.T) {
			ds := &drainThenBoundServer{bound: 1 << 10}
			c := dial(t, ds.start(t), nil)
			ctx := metadata.AppendToOutgoingContext(ctxT(t), "x-big", strings.Repeat("m", 4<<10))
			var err error
			if call == "append" {
				_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
			} else {
				err = c.CreateTopic(ctx, "t", 1)
			}
			require.Error(t, err)
			require.Equal(t, int64(1), ds.drained.Load(), "the first attempt reached the first connection: %v", err)
			require.GreaterOrEqual(t, ds.conns.Load(), int64(2), "gRPC retried on a new connection: %v", err)
			assert.Zero(t, ds.later.Load(), "the retry never left the client")
			assert.Contains(t, err.Error(), "header list size")
			assert.ErrorIs(t, err, remote.ErrMetadataTooLarge, "%v", err)
			assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "%v", err)
			assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "%v", err)
		})
	}
}
