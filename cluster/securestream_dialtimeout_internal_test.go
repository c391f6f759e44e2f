package cluster

import (
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// A listener that accepts and never answers does not hold Dial past the
// timeout Raft gives: it fails with a timeout.
func TestSecureStream_DialToASilentListenerTimesOut(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer silent.Close()
	held := make(chan net.Conn, 1)
	go func() {
		if c, err := silent.Accept(); err == nil {
			held <- c // kept open, never written to
		}
	}()
	defer func() {
		select {
		case c := <-held:
			_ = c.Close()
		default:
		}
	}()

	a, _ := secureOnLoopback(t, testSecret)
	done := make(chan error, 1)
	go func() {
		c, err := a.Dial(raft.ServerAddress(silent.Addr().String()), 100*time.Millisecond)
		if c != nil {
			_ = c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		var ne net.Error
		require.True(t, errorsAs(err, &ne) && ne.Timeout(), "a timeout: %v", err)
	case <-time.After(time.Minute):
		_ = silent.Close()
		t.Fatal("Dial to a listener that never answers did not return")
	}
}
