package main

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/testport"
)

// serve takes every port it listens on, the add-ons' and a cluster node's
// included, before it creates its directory or opens the engine or the
// node: a busy port fails naming its flag and address, and leaves no
// directory behind (and, run in this process, no goroutine: TestMain).
func TestServe_BusyPortOfAnyFlagCreatesNothing(t *testing.T) {
	t.Parallel()
	busyLis := testport.Listen(t)
	defer busyLis.Close()
	busy := busyLis.Addr().String()
	cluster := func(args ...string) []string {
		return append([]string{"--cluster-id", "n1", "--cluster-bootstrap"}, args...)
	}
	for _, c := range []struct {
		flag string
		args []string
	}{
		{"listen", []string{"--listen", busy}},
		{"metrics", []string{"--metrics", busy}},
		{"console", []string{"--console", busy}},
		{"kafka", []string{"--kafka", busy}},
		{"pprof", []string{"--pprof", busy}},
		{"pprof", []string{"--pprof", busy, "--otlp-endpoint", freePort(t), "--otlp-insecure"}},
		{"console", []string{"--console", busy, "--kafka", freePort(t), "--pprof", freePort(t), "--metrics", freePort(t)}},
		{"listen", cluster("--cluster-raft", freePort(t), "--listen", busy)},
		{"cluster-raft", cluster("--cluster-raft", busy)},
		{"cluster-admin", cluster("--cluster-raft", freePort(t), "--cluster-admin", busy)},
		{"metrics", cluster("--cluster-raft", freePort(t), "--metrics", busy)},
		{"console", cluster("--cluster-raft", freePort(t), "--console", busy)},
		{"kafka", cluster("--cluster-raft", freePort(t), "--kafka", busy)},
		{"pprof", cluster("--cluster-raft", freePort(t), "--pprof", busy)},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		args := append([]string{"serve", "--dir", dir, "--log-level", "error"}, c.args...)
		if c.flag != "listen" {
			args = append(args, "--listen", freePort(t))
		}
		r := runBounded(t, nil, args...)
		require.Equal(t, exitFailure, r.code, "%q: %v", c.args, r)
		assert.Contains(t, r.stderr, "--"+c.flag+": listen on "+busy, "%q", c.args)
		assert.Empty(t, r.stdout, "%q", c.args)
		assert.NoDirExists(t, dir, "%q: serve created its directory before failing", c.args)
	}
}

// A flag serve refuses is a usage error (exit code 2) naming the flag,
// refused before serve takes a port or creates anything: with --listen
// busy it is still the usage error, and the directory is never made.
func TestServe_RefusedFlagsCreateNothing(t *testing.T) {
	t.Parallel()
	busyLis := testport.Listen(t)
	defer busyLis.Close()
	busy := busyLis.Addr().String()
	cluster := func(args ...string) []string {
		return append([]string{"--cluster-id", "n1", "--cluster-raft", freePort(t), "--cluster-bootstrap"}, args...)
	}
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--kafka-namespace", []string{"--kafka", freePort(t), "--kafka-namespace", "bad name"}},
		{"--kafka-namespace", []string{"--kafka", freePort(t), "--kafka-namespace", "a:b"}},
		{"--kafka-advertise", []string{"--kafka", freePort(t), "--kafka-advertise", "bogus"}},
		{"--kafka-advertise", []string{"--kafka", freePort(t), "--kafka-advertise", ":9092"}},
		{"--kafka-advertise", []string{"--kafka", freePort(t), "--kafka-advertise", "0.0.0.0:9092"}},
		{"--kafka-advertise", []string{"--kafka", freePort(t), "--kafka-advertise", "kafka.example:0"}},
		{"--kafka-namespace", cluster("--kafka", freePort(t), "--kafka-advertise", "127.0.0.1:9092", "--kafka-namespace", "ns")},
		{"--kafka-advertise", cluster("--kafka", freePort(t), "--kafka-advertise", ":9092")},
		{"--kafka", cluster("--kafka", "0.0.0.0:9092")},
		{`--cluster-raft "0.0.0.0:7751": must name a host other nodes can dial`,
			[]string{"--cluster-id", "n1", "--cluster-raft", "0.0.0.0:7751", "--cluster-bootstrap"}},
		{`--cluster-raft ":7751": must name a host other nodes can dial`,
			[]string{"--cluster-id", "n1", "--cluster-raft", ":7751"}},
	} {
		for _, listen := range []string{freePort(t), busy} {
			dir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"serve", "--dir", dir, "--log-level", "error", "--listen", listen}, c.args...)
			r := runBounded(t, nil, args...)
			assert.Equal(t, exitUsage, r.code, "%q: %v", args, r)
			assert.Contains(t, r.stderr, c.want, "%q", args)
			assert.Empty(t, r.stdout, "%q", args)
			assert.NoDirExists(t, dir, "%q: serve created its directory before refusing a flag", args)
		}
	}
}
