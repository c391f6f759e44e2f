package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// With tokens, pprof on a loopback address stays open to go tool pprof,
// but its /debug/pprof/cmdline, the process's command line, carries every
// --token given to serve (the admin's too): it answers only the token
// /metrics needs, on loopback as on a network address. Before, any
// request that reached the loopback port (another container of the same
// network namespace, a web page through DNS rebinding) read the tokens
// there. Without tokens it stays open.
func TestServe_PprofCmdlineNeedsAnAdminTokenOnLoopback(t *testing.T) {
	t.Parallel()
	eng, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = eng.Close() })
	start := func(so *remote.ServerOptions, tokens map[string]remote.Rights) string {
		grpcSrv, err := remote.NewServer(eng, so)
		require.NoError(t, err)
		t.Cleanup(grpcSrv.Stop)
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		o := &otelAddon{pprof: lis.Addr().String()}
		stop, err := o.start(context.Background(), serveEnv{eng: eng, backend: eng, grpc: grpcSrv, tokens: tokens,
			log: slog.New(slog.DiscardHandler), errc: make(chan error, 1), ports: servePorts{"pprof": lis}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = stop(context.Background()) })
		return "http://" + lis.Addr().String()
	}

	url := start(&remote.ServerOptions{Tokens: opsTokens, TokenNamespaces: map[string]string{"tenant": "tenant-a"}},
		map[string]remote.Rights{"ops": remote.RightAdmin, "writer": remote.RightProduce, "reader": remote.RightConsume})
	assertOpsGuarded(t, url+"/debug/pprof/cmdline", []string{"writer", "reader", "tenant"}, os.Args[0])
	code, _, body := httpGetBearer(t, url+"/debug/pprof/goroutine?debug=1", "")
	assert.Equal(t, http.StatusOK, code, "the profiles stay open on loopback: %s", firstLine(body))

	open := start(&remote.ServerOptions{}, nil)
	code, _, body = httpGetBearer(t, open+"/debug/pprof/cmdline", "")
	assert.Equal(t, http.StatusOK, code, "without tokens: %s", firstLine(body))
	assert.Contains(t, body, os.Args[0])
}
