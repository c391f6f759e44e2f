package cluster

import (
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// closeCountingStream is a TCP stream layer that counts its closes.
type closeCountingStream struct {
	net.Listener
	closes atomic.Int32
}

func (s *closeCountingStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(addr), timeout)
}

func (s *closeCountingStream) Close() error {
	s.closes.Add(1)
	return s.Listener.Close()
}

// A failed Open closes the caller's RaftStream, as Close would, whatever
// step failed: before the transport exists too (the node owns it).
func TestOpen_FailureClosesTheCallersRaftStream(t *testing.T) {
	for name, mod := range map[string]func(o *Options, dir string) string{
		"address":   func(o *Options, dir string) string { o.RaftAddr = "0.0.0.0:1"; return dir },
		"log store": func(o *Options, dir string) string { o.LogStore = "nope"; return dir },
	} {
		t.Run(name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			s := &closeCountingStream{Listener: l}
			o := &Options{ID: "n1", RaftAddr: l.Addr().String(), RaftStream: s, Bootstrap: true}
			dir := mod(o, t.TempDir())
			n, err := Open(dir, o)
			require.Error(t, err)
			assert.Nil(t, n)
			assert.EqualValues(t, 1, s.closes.Load(), "the stream is closed once")
			if s.closes.Load() == 0 {
				_ = l.Close()
			}
		})
	}
}
