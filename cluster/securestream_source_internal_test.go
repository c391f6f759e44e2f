package cluster

import (
	"crypto/tls"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A flood of connections that send nothing, all from one address, closes
// only its own: a peer from another address whose handshake is under way
// when the flood comes completes it. The peer dials from 127.0.0.2, the
// flood from 127.0.0.1 (Linux answers on every address of 127/8).
func TestSecureStream_FloodFromOneSourceSparesAnotherSourcesHandshake(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	// An hour: no connection ends by the timeout during the test.
	b, err := newSecureStream(l, nil, testSecret, nil, time.Hour, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	accepted := func() uint64 {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.seq
	}

	// The peer sets TLS up and is about to prove the secret.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
	pc, err := d.Dial("tcp", l.Addr().String())
	require.NoError(t, err, "dial from 127.0.0.2")
	peer := tls.Client(pc, &tls.Config{MinVersion: tls.VersionTLS13, InsecureSkipVerify: true, NextProtos: []string{raftProtocol}})
	t.Cleanup(func() { _ = peer.Close() })
	require.NoError(t, peer.SetDeadline(time.Now().Add(time.Minute)))
	require.NoError(t, peer.Handshake())
	require.Equal(t, uint64(1), accepted())

	// The flood: enough connections from one address to fill every room.
	flood := make([]net.Conn, maxPendingHandshakes+1)
	for i := range flood {
		c, err := net.Dial("tcp", l.Addr().String())
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		flood[i] = c
	}
	// The listener tracks each connection as it accepts it, closing
	// another first when there is no room for it: once it accepted the
	// whole flood, whatever the flood closes is closed.
	require.Eventually(t, func() bool { return accepted() == uint64(len(flood)+1) }, time.Minute, 5*time.Millisecond,
		"the listener accepts the flood")
	b.mu.Lock()
	fromFlood := 0
	for c := range b.pending {
		if sourceOf(c) == "127.0.0.1" {
			fromFlood++
		}
	}
	b.mu.Unlock()
	assert.LessOrEqual(t, fromFlood, maxPendingPerSource, "the flood's handshakes under way")

	p, err := raftProof(b.key, roleDialler, peer)
	require.NoError(t, err)
	_, err = peer.Write(p)
	require.NoError(t, err)
	require.NoError(t, checkProof(b.key, roleListener, peer), "the peer's handshake completes")
	acceptOne(t, b)
}
