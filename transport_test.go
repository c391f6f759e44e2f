package equeue_test

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// transports are the ways a producer or consumer reaches an engine: the
// consumer-group and delivery tests run over each.
var transports = []string{"inproc", "remote"}

func forTransports(t *testing.T, test func(t *testing.T, transport string)) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { test(t, tr) })
	}
}

// brokerOver returns e itself in-process, or a gRPC client of a
// remote.Server serving e on loopback. Both are torn down before e closes.
func brokerOver(t testing.TB, e *equeue.Engine, transport string) equeue.Broker {
	t.Helper()
	if transport == "inproc" {
		return e
	}
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		<-served
	})
	c, err := remote.Dial(lis.Addr().String(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
