package remote_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// TestServer_ConnectionStreamsAreBounded speaks HTTP/2 to a server as a
// hostile client would: it opens calls whose request never comes (each
// holds a stream, and a goroutine waiting for the request, without reaching
// any of the server's limits) and ignores the server's announced bound. The
// server announces its per-connection stream bound (the connection's shares
// of MaxInFlight, MaxLongPolls and MaxAppendStreams, plus room for health
// checks and calls on their way to being refused), and refuses the stream
// past it with REFUSED_STREAM, as gRPC does; the streams within it are
// left open.
func TestServer_ConnectionStreamsAreBounded(t *testing.T) {
	e := openEngine(t, nil)
	// Shares of one connection: 2 calls, 2 long-polls, 1 append stream.
	s := startServer(t, e, "", &remote.ServerOptions{MaxInFlight: 4, MaxLongPolls: 4, MaxAppendStreams: 2})
	assertConnStreamsBounded(t, s.addr, uint32(2+2+1+remote.ExtraConnStreams))
}

// assertConnStreamsBounded checks that the server at addr announces want
// as its bound of one connection's streams, and refuses the stream past
// it, as TestServer_ConnectionStreamsAreBounded tells.
func assertConnStreamsBounded(t *testing.T, addr string, want uint32) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer c.Close()
	// Bounds a test that fails, not a duration it measures.
	require.NoError(t, c.SetDeadline(time.Now().Add(30*time.Second)))
	_, err = io.WriteString(c, http2.ClientPreface)
	require.NoError(t, err)
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	require.NoError(t, fr.WriteSettings())

	f, err := fr.ReadFrame()
	require.NoError(t, err)
	settings, ok := f.(*http2.SettingsFrame)
	require.True(t, ok, "the server's first frame is its SETTINGS, not %T", f)
	announced, ok := settings.Value(http2.SettingMaxConcurrentStreams)
	require.True(t, ok, "the server announces no bound on a connection's streams")
	assert.Equal(t, want, announced)
	require.NoError(t, fr.WriteSettingsAck())

	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	open := func(id uint32) {
		hbuf.Reset()
		for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", pb.Broker_Route_FullMethodName},
			{":authority", addr}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
			require.NoError(t, enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]}))
		}
		// No END_STREAM and no request: the call waits for it.
		require.NoError(t, fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true}))
	}
	last := uint32(0)
	for i := uint32(0); i <= want; i++ {
		last = 2*i + 1
		open(last)
	}
	for {
		f, err := fr.ReadFrame()
		require.NoError(t, err, "no stream was refused")
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			assert.Equal(t, last, f.StreamID, "only the stream past the bound is refused")
			assert.Equal(t, http2.ErrCodeRefusedStream, f.ErrCode)
			return
		case *http2.PingFrame:
			if !f.IsAck() {
				require.NoError(t, fr.WritePing(true, f.Data))
			}
		case *http2.GoAwayFrame:
			t.Fatalf("the server closed the connection: %v", f.ErrCode)
		}
	}
}
