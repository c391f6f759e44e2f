package remote

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// breakingBroker ends every AppendStream call at once, just after its
// header (as a failing server or a proxy might), counting the calls.
type breakingBroker struct {
	pb.UnimplementedBrokerServer
	opens atomic.Int64
}

func (b *breakingBroker) AppendStream(st pb.Broker_AppendStreamServer) error {
	b.opens.Add(1)
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(DefaultMaxMessageBytes))); err != nil {
		return err
	}
	return status.Error(codes.Unavailable, "injected: the stream breaks at once")
}

// A broker that breaks every append stream at once used to be called again
// in a tight loop (a stream per round trip, hundreds a second, while sends
// waited or were retried). Streams that break before answering are now
// reopened after a growing pause, so a window of sends sent again as soon
// as they fail opens only a handful; each send ends with its context, not
// stored or unknown, never stored.
func TestAppendPipe_StreamsThatBreakAtOnceAreReopenedWithBackoff(t *testing.T) {
	gs := grpc.NewServer()
	b := &breakingBroker{}
	pb.RegisterBrokerServer(gs, b)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(lis) }()
	defer func() {
		gs.Stop()
		<-served
	}()
	c, err := Dial(lis.Addr().String(), &ClientOptions{MaxReconnectDelay: time.Second})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()

	window, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	sends := 0
	for window.Err() == nil {
		_, err := c.Append(window, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.Error(t, err)
		if !errors.Is(err, equeue.ErrIndeterminate) && !errors.Is(err, ErrUnavailable) {
			require.ErrorIs(t, err, context.DeadlineExceeded)
		}
		sends++
	}
	// Pauses of at least 50, 100, 200 and 400 ms leave room for at most
	// five opens in the window; a tight loop opens one per round trip.
	opens := b.opens.Load()
	assert.Positive(t, opens)
	assert.LessOrEqual(t, opens, int64(10), "%d streams opened for %d sends in the window", opens, sends)
}

// The pause grows from reopenBackoffMin, doubling, up to the client's
// MaxReconnectDelay; a stream that answered an append resets it.
func TestAppendPipe_ReopenBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		max  time.Duration
		want time.Duration
	}{
		{1, 5 * time.Second, 100 * time.Millisecond},
		{2, 5 * time.Second, 200 * time.Millisecond},
		{4, 5 * time.Second, 800 * time.Millisecond},
		{7, 5 * time.Second, 5 * time.Second},
		{1 << 20, 5 * time.Second, 5 * time.Second},
		{1, 30 * time.Millisecond, 30 * time.Millisecond},
	} {
		assert.Equal(t, tc.want, reopenBackoff(tc.n, tc.max), "after %d breaks, at most %v", tc.n, tc.max)
	}

	p := newAppendPipe(&Client{}, time.Second)
	defer p.stop()
	early := func(answered bool) {
		p.broke(&pipeStream{inFlight: map[uint64]*pipeSend{}, answered: answered, cancel: func() {}}, errors.New("cut"))
	}
	early(false)
	early(false)
	assert.Equal(t, 2, p.earlyBreaks)
	assert.Positive(t, p.reopenDelay(), "no stream opens before the pause ends")
	early(true)
	assert.Equal(t, 0, p.earlyBreaks, "a stream that worked resets the backoff")
	assert.LessOrEqual(t, p.reopenDelay(), time.Duration(0), "and the next stream opens at once")
}
