package console_test

import (
	"net"
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

// TestConsole_OverRemote runs the console on a remote.Client: it needs only
// the admin seam and pulls.
func TestConsole_OverRemote(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	sd := seed(t, e)
	s := serve(t, dialRemote(t, e, nil), console.Options{})
	for _, p := range pages {
		pg := s.get(t, prefix+p)
		require.Equal(t, http.StatusOK, pg.status, "%s: %s", p, pg.body)
	}
	assert.Contains(t, s.get(t, prefix+"delayed").body, `<b id="delayed-count">7</b>`, "delayed messages over the wire")
	assert.Contains(t, s.get(t, prefix).body, "Store size", "the store size over the wire")
	pg := s.get(t, prefix+"topics/orders/messages?id="+sd.poisonID)
	assert.Contains(t, pg.body, "1 found")
	assert.Equal(t, http.StatusNotFound, s.get(t, prefix+"topics/nosuch").status, "engine errors keep their kind over the wire")

	tok := csrf(t, s.get(t, prefix+"groups/billing/dlq"))
	pg = s.post(t, prefix+"groups/billing/dlq/redrive", url.Values{"csrf": {tok}, "all": {"1"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	dl, err := e.ListDeadLetters(ctx, "billing", equeue.ListDeadLettersRequest{From: 0, Max: 10})
	require.NoError(t, err)
	assert.True(t, dl[0].Redriven)
}

// dialRemote serves e over gRPC and returns a client of it with opts.
func dialRemote(t testing.TB, e *equeue.Engine, opts *remote.ClientOptions) *remote.Client {
	t.Helper()
	srv, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() { srv.Stop(); <-served })
	cl, err := remote.Dial(lis.Addr().String(), opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = cl.Close() })
	return cl
}

// plainBroker hides the optional extras of the engine.
type plainBroker struct{ console.Broker }

func TestConsole_WithoutOptionalExtras(t *testing.T) {
	e := openEngine(t)
	seed(t, e)
	s := serve(t, plainBroker{e}, console.Options{})
	pg := s.get(t, prefix)
	require.Equal(t, http.StatusOK, pg.status)
	assert.NotContains(t, pg.body, "Store size")
	assert.Contains(t, s.get(t, prefix+"delayed").body, "does not report delayed messages")
}
