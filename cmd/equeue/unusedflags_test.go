package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A global flag that the command, or the mode it runs in, does not use
// is a usage error naming it (and the flag meant, when one is obvious),
// not taken and then ignored: "serve --tls-ca" where --client-ca was
// meant served without mutual TLS.
func TestUnusedFlags_AreUsageErrors(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	dir := filepath.Join(base, "data")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--dir", dir, "--listen", freePort(t), "--tls-ca", "ca.pem"}, []string{"--tls-ca", "serve", "--client-ca"}},
		{[]string{"serve", "--dir", dir, "--listen", freePort(t), "--insecure-skip-verify"}, []string{"--insecure-skip-verify", "serve"}},
		{[]string{"serve", "--dir", dir, "--listen", freePort(t), "--connect-timeout", "3s"}, []string{"--connect-timeout", "serve"}},
		{[]string{"--dir", dir, "topic", "list", "--tls-ca", "ca.pem"}, []string{"--tls-ca", "--server"}},
		{[]string{"--dir", dir, "topic", "list", "--tls-cert", "c.pem", "--tls-key", "k.pem"}, []string{"--tls-cert", "--server"}},
		{[]string{"--dir", dir, "stats", "--insecure-skip-verify"}, []string{"--insecure-skip-verify", "--server"}},
		{[]string{"--dir", dir, "topic", "list", "--token", "t"}, []string{"--token", "--server"}},
		{[]string{"--dir", dir, "bench", "--count", "1", "--connect-timeout", "3s"}, []string{"--connect-timeout", "--server"}},
		{[]string{"bench", "--count", "1", "--tls-ca", "ca.pem"}, []string{"--tls-ca", "--server"}},
		{[]string{"--server", "127.0.0.1:1,127.0.0.1:2", "topic", "list", "--connect-timeout", "3s"}, []string{"--connect-timeout", "one --server"}},
		{[]string{"cluster", "status", "--admin", "127.0.0.1:1", "--tls-ca", "ca.pem"}, []string{"--tls-ca", "cluster"}},
		{[]string{"cluster", "status", "--admin", "127.0.0.1:1", "--server", "127.0.0.1:2"}, []string{"--server", "cluster", "--admin"}},
		{[]string{"cluster", "status", "--admin", "127.0.0.1:1", "--dir", dir}, []string{"--dir", "cluster"}},
	} {
		r := runBounded(t, nil, c.args...)
		assert.Equal(t, exitUsage, r.code, "%q: %v", c.args, r)
		for _, w := range c.want {
			assert.Contains(t, r.stderr, w, "%q", c.args)
		}
		assert.Empty(t, r.stdout, "%q", c.args)
		assert.NoDirExists(t, dir, "%q: the command ran before refusing", c.args)
	}
}

// A client flag given at its default value changes nothing, so a wrapper
// script that always passes it keeps working where the flag is unused.
func TestUnusedFlags_AtTheirDefaultAreLetThrough(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	r := runBounded(t, nil, "--dir", dir, "topic", "create", "t", "--insecure-skip-verify=false")
	assert.Equal(t, 0, r.code, "%v", r)
	assert.NotContains(t, r.stderr, "insecure-skip-verify")
}
