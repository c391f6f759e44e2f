package remote

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/peer"
)

// A connection's stream appends hold by default half of MaxInFlight,
// rounded up; a share of all of it or more bounds nothing.
func TestStreamSlots_Defaults(t *testing.T) {
	for _, tc := range []struct {
		total   int64
		perConn int
		want    int // 0: no share
	}{
		{total: 1024, want: 512},
		{total: 9, want: 5},
		{total: 2, want: 1},
		{total: 1},
		{total: 8, perConn: 3, want: 3},
		{total: 8, perConn: 8},
		{total: 8, perConn: 100},
	} {
		s := newStreamSlots(tc.total, tc.perConn)
		if tc.want == 0 {
			assert.Nil(t, s, "%+v", tc)
			continue
		}
		if assert.NotNil(t, s, "%+v", tc) {
			assert.Equal(t, tc.want, s.limit, "%+v", tc)
		}
	}
}

// An append past its connection's share waits until one is given back or
// its call ends; another connection's are not held up; a connection's
// entry goes once its calls are over and its slots given back, even when
// the last is given back after its call ended.
func TestStreamSlots_WaitAndForget(t *testing.T) {
	s := newStreamSlots(4, 0)
	require.NotNil(t, s)
	onConn := func(port int) context.Context {
		return peer.NewContext(context.Background(), &peer.Peer{Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}})
	}
	a, b := s.join(onConn(1)), s.join(onConn(2))
	for range 2 {
		require.NoError(t, s.take(context.Background(), a))
	}
	require.NoError(t, s.take(context.Background(), b), "another connection waits for the first's share")

	took := make(chan error, 1)
	go func() { took <- s.take(context.Background(), a) }()
	assert.Eventually(t, func() bool { return s.waitingAppends() == 1 }, 30*time.Second, time.Millisecond)
	s.give(a)
	require.NoError(t, <-took)
	assert.Zero(t, s.waitingAppends())

	ctx, cancel := context.WithCancel(context.Background())
	go func() { took <- s.take(ctx, a) }()
	assert.Eventually(t, func() bool { return s.waitingAppends() == 1 }, 30*time.Second, time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-took, context.Canceled)

	s.leave(a)
	s.leave(b)
	s.give(b)
	s.give(a)
	assert.Len(t, s.by, 1, "a connection holding a slot is kept")
	s.give(a)
	assert.Empty(t, s.by)

	assert.Nil(t, s.join(context.Background()), "a call with no TCP peer is bounded by MaxInFlight alone")
	var none *streamSlots
	assert.Nil(t, none.join(onConn(1)))
	assert.NoError(t, none.take(context.Background(), nil))
	none.give(nil)
	none.leave(nil)
	assert.Zero(t, none.waitingAppends())
}
