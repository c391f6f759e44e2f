package cluster

import (
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A peer that opened a Raft connection and hangs (it sent the start of a
// call and nothing more) does not keep the node's handler of it alive:
// Close closes the connection.
func TestNode_CloseEndsConnectionsPeersOpened(t *testing.T) {
	n, err := Open(t.TempDir(), &Options{ID: "n1", RaftAddr: "127.0.0.1:0", ClientAddr: "client-n1", Bootstrap: true})
	require.NoError(t, err)
	conn, err := net.Dial("tcp", n.RaftAddr())
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte{0}) // an AppendEntries call's type, none of its body
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		n.stream.mu.Lock()
		defer n.stream.mu.Unlock()
		return len(n.stream.conns) == 1
	}, 10*time.Second, 5*time.Millisecond, "the node accepted the connection")

	require.NoError(t, n.Close())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(10*time.Second)))
	_, err = conn.Read(make([]byte, 1))
	require.Error(t, err)
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the node left the connection open: %v", err)
}

// Open checks RaftAddr's form without looking its host name up; a name
// that resolves to an unspecified address (0.0.0.0, as a wrong hosts file
// can say) is caught where it is looked up, when the node listens: other
// nodes could not dial the address it would advertise.
func TestListenTCP_RefusesAnUnspecifiedAddress(t *testing.T) {
	_, err := listenTCP("0.0.0.0:0")
	require.ErrorIs(t, err, errNotAdvertisable)
	s, err := listenTCP("127.0.0.1:0")
	require.NoError(t, err)
	require.NoError(t, s.Close())
}
