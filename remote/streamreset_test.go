package remote_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/testport"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// resetServer speaks just enough HTTP/2 to stand, as a proxy would, between
// a client and a broker, and resets every call's stream with code once its
// request arrived: the request left the client, and no answer comes back.
// With stream set it opens AppendStream calls (and resets them on their
// first append); without it it answers them Unimplemented, as a broker
// without AppendStream does, so appends go as unary Append calls.
type resetServer struct {
	code    http2.ErrCode
	stream  bool
	arrived atomic.Int64 // requests that reached the server
}

// start serves until the test ends and returns the address.
func (rs *resetServer) start(t *testing.T) string {
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
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				rs.serve(c)
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
func (rs *resetServer) serve(c net.Conn) {
	defer c.Close()
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(c, preface); err != nil || string(preface) != http2.ClientPreface {
		return
	}
	fr := http2.NewFramer(c, c)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if fr.WriteSettings() != nil {
		return
	}
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	headers := func(id uint32, end bool, fields ...string) error {
		hbuf.Reset()
		for i := 0; i < len(fields); i += 2 {
			_ = enc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true, EndStream: end})
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
			if f.PseudoValue("path") != pb.Broker_AppendStream_FullMethodName {
				break
			}
			if rs.stream {
				err = headers(f.StreamID, false, ":status", "200", "content-type", "application/grpc",
					"equeue-max-message-bytes", strconv.Itoa(remote.DefaultMaxMessageBytes), "equeue-stream-window", "16")
			} else {
				err = headers(f.StreamID, true, ":status", "200", "content-type", "application/grpc",
					"grpc-status", "12", "grpc-message", "no AppendStream")
			}
		case *http2.DataFrame:
			if len(f.Data()) > 0 {
				rs.arrived.Add(1)
				err = fr.WriteRSTStream(f.StreamID, rs.code)
			}
		}
		if err != nil {
			return
		}
	}
}

// resetCodes are the RST_STREAM codes a peer may end a call with; gRPC
// reports FLOW_CONTROL_ERROR and ENHANCE_YOUR_CALM as ResourceExhausted,
// the code of its own message size limits, INADEQUATE_SECURITY as
// PermissionDenied and CANCEL as Canceled. FRAME_SIZE_ERROR, Internal, is
// what a broker resets a call with when its headers are over the broker's
// bound: from a proxy, after it passed the request on, it says nothing of
// whether the request ran.
var resetCodes = []http2.ErrCode{http2.ErrCodeFlowControl, http2.ErrCodeEnhanceYourCalm, http2.ErrCodeInternal,
	http2.ErrCodeProtocol, http2.ErrCodeInadequateSecurity, http2.ErrCodeCancel, http2.ErrCodeFrameSize}

// A send whose stream was reset after its request left the client may be
// stored: it is ErrIndeterminate, on the stream and as a unary call, never
// the "answer too large" (or permission, or cancellation) that gRPC's code
// for the reset reads as, which would say it was not stored.
func TestStreamReset_SendIsIndeterminate(t *testing.T) {
	for _, path := range []string{"unary", "stream"} {
		for _, code := range resetCodes {
			t.Run(path+"/"+code.String(), func(t *testing.T) {
				ctx := ctxT(t)
				rs := &resetServer{code: code, stream: path == "stream"}
				c := dial(t, rs.start(t), nil)
				_, err := c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
				require.Error(t, err)
				require.Positive(t, rs.arrived.Load(), "the request left the client")
				assert.ErrorIs(t, err, equeue.ErrIndeterminate, "a send that may be stored read as not stored: %v", err)
				assertNotMisread(t, err)
			})
		}
	}
}

// Any other call whose stream was reset broke on the way: it is
// ErrUnavailable, which clients retry, not an answer of the broker's.
func TestStreamReset_CallIsUnavailable(t *testing.T) {
	for _, code := range resetCodes {
		t.Run(code.String(), func(t *testing.T) {
			rs := &resetServer{code: code}
			c := dial(t, rs.start(t), nil)
			_, err := c.Route(ctxT(t), "t")
			require.Error(t, err)
			assert.ErrorIs(t, err, remote.ErrUnavailable, "%v", err)
			assertNotMisread(t, err)
		})
	}
}

// assertNotMisread checks that err, a reset stream, reads as none of the
// answers gRPC's code for the reset stands for elsewhere.
func assertNotMisread(t *testing.T, err error) {
	t.Helper()
	for _, wrong := range []error{equeue.ErrMessageTooLarge, remote.ErrBusy, remote.ErrPermissionDenied, context.Canceled, equeue.ErrInvalidArgument} {
		assert.NotErrorIs(t, err, wrong, "%v", err)
	}
}
