package remote

import (
	"context"
	"net"
	"strconv"
	"sync/atomic"

	"google.golang.org/grpc/credentials"
)

// namingCreds wraps the client's transport credentials so that each
// connection they hand to gRPC has a local address of its own (namedConn):
// the told limits (toldLimits) tell the latest connection from the ones
// before by that address, which alone may be the same for all of them (a
// Unix socket's client end has no name; a proxy or a dialer may give the
// same one to each).
type namingCreds struct {
	credentials.TransportCredentials
	// seq numbers the connections handed over, from 1.
	seq *atomic.Uint64
}

// newNamingCreds wraps creds (see namingCreds).
func newNamingCreds(creds credentials.TransportCredentials) namingCreds {
	return namingCreds{TransportCredentials: creds, seq: new(atomic.Uint64)}
}

// ClientHandshake is the wrapped handshake; the connection it returns
// has a local address naming it alone.
func (n namingCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, info, err := n.TransportCredentials.ClientHandshake(ctx, authority, raw)
	if err != nil {
		return conn, info, err
	}
	return &namedConn{Conn: conn, local: connAddr{addr: conn.LocalAddr(), n: n.seq.Add(1)}}, info, nil
}

// Clone clones the wrapped credentials; the clone numbers its
// connections in the same sequence.
func (n namingCreds) Clone() credentials.TransportCredentials {
	return namingCreds{TransportCredentials: n.TransportCredentials.Clone(), seq: n.seq}
}

// namedConn is a connection whose local address names it alone.
type namedConn struct {
	net.Conn
	// local is the address LocalAddr returns.
	local connAddr
}

// LocalAddr returns the connection's own address: its local address and
// its number.
func (c *namedConn) LocalAddr() net.Addr { return c.local }

// connAddr is a connection's local address (nil when unknown) with its
// number among the client's connections.
type connAddr struct {
	addr net.Addr
	n    uint64
}

// Network is the local address's network; "" when unknown.
func (a connAddr) Network() string {
	if a.addr == nil {
		return ""
	}
	return a.addr.Network()
}

// String is the local address followed by "#" and the connection's
// number.
func (a connAddr) String() string {
	s := ""
	if a.addr != nil {
		s = a.addr.String()
	}
	return s + "#" + strconv.FormatUint(a.n, 10)
}
