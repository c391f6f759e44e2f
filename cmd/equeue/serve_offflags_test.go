package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A flag of an add-on or of cluster mode given while that is off is a
// usage error naming it and the flag that switches it on, before serve
// creates anything: it would otherwise be taken and then ignored.
func TestServe_OffAddonFlagsAreRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--console-prefix", "/ops/"}, "--console-prefix needs --console ADDR"},
		{[]string{"--console-read-only"}, "--console-read-only needs --console ADDR"},
		{[]string{"--console-trusted-proxy", "10.0.0.1"}, "--console-trusted-proxy needs --console ADDR"},
		{[]string{"--cluster-bootstrap"}, "--cluster-bootstrap needs --cluster-id ID"},
		{[]string{"--cluster-raft", "127.0.0.1:7751"}, "--cluster-raft needs --cluster-id ID"},
		{[]string{"--cluster-log-store", "bolt"}, "--cluster-log-store needs --cluster-id ID"},
		{[]string{"--cluster-secret-file", "secret"}, "--cluster-secret-file needs --cluster-id ID"},
		{[]string{"--cluster-insecure-raft"}, "--cluster-insecure-raft needs --cluster-id ID"},
		{[]string{"--cluster-salt", "orders-eu"}, "--cluster-salt needs --cluster-id ID"},
	} {
		t.Run(c.args[0], func(t *testing.T) {
			t.Parallel()
			assertServeRefuses(t, c.want, c.args...)
		})
	}
}

// assertServeRefuses runs serve on a new directory with args and checks
// that it is refused as a usage error whose message contains want, with
// nothing on stdout and its directory not created: refused before serve
// takes a port or creates anything.
func assertServeRefuses(t *testing.T, want string, args ...string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "data")
	r := runBounded(t, nil, append([]string{"serve", "--dir", dir, "--log-level", "error", "--listen", freePort(t)}, args...)...)
	assert.Equal(t, exitUsage, r.code, "%q: %v", args, r)
	assert.Contains(t, r.stderr, want, "%q", args)
	assert.Empty(t, r.stdout, "%q", args)
	assert.NoDirExists(t, dir, "%q: serve created its directory before refusing", args)
}
