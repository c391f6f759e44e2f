package cluster

import (
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// helloPair is a listening hello stream and one that dials it, each with
// a cluster ID the test sets.
type helloPair struct {
	dialID, acceptID atomic.Value // string
	dial, accept     *helloStream
	addr             raft.ServerAddress
}

func newHelloPair(t *testing.T, dialID, acceptID string) *helloPair {
	t.Helper()
	l, err := listenTCP("127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	p := &helloPair{addr: raft.ServerAddress(l.Addr().String())}
	p.dialID.Store(dialID)
	p.acceptID.Store(acceptID)
	p.dial = newHelloStream(l, func() string { return p.dialID.Load().(string) }, nil)
	p.accept = newHelloStream(l, func() string { return p.acceptID.Load().(string) }, nil)
	return p
}

// serve accepts one connection and echoes what it reads, 4 bytes at a
// time; the channel gets the error that ended it.
func (p *helloPair) serve() <-chan error {
	done := make(chan error, 1)
	go func() {
		c, err := p.accept.Accept()
		if err != nil {
			done <- err
			return
		}
		defer func() { _ = c.Close() }()
		buf := make([]byte, 4)
		for {
			if _, err := io.ReadFull(c, buf); err != nil {
				done <- err
				return
			}
			if _, err := c.Write(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	return done
}

// echo sends 4 bytes on c and reads them back.
func echo(c net.Conn, s string) error {
	if _, err := c.Write([]byte(s)); err != nil {
		return err
	}
	got := make([]byte, len(s))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != s {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// Two nodes talk unless both have a cluster ID and the two differ: then
// both ends refuse, with an error matching ErrForeignCluster.
func TestHelloStream_RefusesAnotherCluster(t *testing.T) {
	for _, tc := range []struct {
		name             string
		dialID, acceptID string
		refused          bool
	}{
		{"same cluster", "A", "A", false},
		{"dialer without an ID", "", "A", false},
		{"acceptor without an ID", "A", "", false},
		{"neither with an ID", "", "", false},
		{"another cluster", "A", "B", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newHelloPair(t, tc.dialID, tc.acceptID)
			served := p.serve()
			c, err := p.dial.Dial(p.addr, 5*time.Second)
			if tc.refused {
				require.ErrorIs(t, err, ErrForeignCluster)
				require.ErrorIs(t, <-served, ErrForeignCluster, "the accepting end took the call")
				return
			}
			require.NoError(t, err)
			require.NoError(t, echo(c, "ping"))
			require.NoError(t, c.Close())
			assert.ErrorIs(t, <-served, io.EOF)
		})
	}
}

// A connection of a version before hellos (its first byte is a Raft
// call's type) is taken, its bytes as they came.
func TestHelloStream_TakesAVersionBeforeHellos(t *testing.T) {
	p := newHelloPair(t, "A", "A")
	p.dial.noHello = true
	served := p.serve()
	c, err := p.dial.Dial(p.addr, 5*time.Second)
	require.NoError(t, err)
	_, isHello := c.(*helloConn)
	require.False(t, isHello)
	require.NoError(t, echo(c, "\x00abc"))
	require.NoError(t, c.Close())
	assert.ErrorIs(t, <-served, io.EOF)
}

// A node without an ID at the hello that takes one later keeps a
// connection whose other end gave that ID, and refuses, at both ends'
// next call, one whose other end gave another.
func TestHelloStream_IDTakenAfterTheHello(t *testing.T) {
	for _, tc := range []struct {
		name, taken string
		refused     bool
	}{
		{"the other end's", "A", false},
		{"another", "B", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newHelloPair(t, "", "A")
			served := p.serve()
			c, err := p.dial.Dial(p.addr, 5*time.Second)
			require.NoError(t, err)
			defer func() { _ = c.Close() }()
			require.NoError(t, echo(c, "ping"))
			p.dialID.Store(tc.taken)
			err = echo(c, "pong")
			if !tc.refused {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrForeignCluster)
			assert.ErrorIs(t, <-served, io.EOF, "the dialing end left the connection open")
		})
	}
}

// TestHelloTimeout_DialAndHellosShareRaftsTimeout: the hellos of a dial
// get what the connection left of the timeout Raft gave, so a dial to a
// peer that accepts but never answers takes no longer than Raft's
// timeout, not twice it.
func TestHelloTimeout_DialAndHellosShareRaftsTimeout(t *testing.T) {
	assert.Equal(t, time.Duration(0), helloTimeout(0, time.Second), "no timeout stays none")
	assert.Equal(t, 7*time.Second, helloTimeout(10*time.Second, 3*time.Second))
	assert.Equal(t, time.Millisecond, helloTimeout(10*time.Second, 11*time.Second), "a connection that took it all leaves the hellos a millisecond")
}
