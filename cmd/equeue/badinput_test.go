package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runHere runs one command line in this process, as main does, with stdin
// as standard input (nil: closed, every read fails). A panic fails the test
// with the command line that caused it.
func runHere(t *testing.T, ctx context.Context, stdin io.Reader, args ...string) (res result) {
	t.Helper()
	if stdin == nil {
		stdin = closedReader{}
	}
	var stdout, stderr bytes.Buffer
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("equeue %q panicked: %v", args, p)
		}
	}()
	code := run(ctx, args, stdin, &stdout, &stderr)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// runBounded is runHere with a bound that only a hung command reaches.
func runBounded(t *testing.T, stdin io.Reader, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runHere(t, ctx, stdin, args...)
	if ctx.Err() != nil {
		t.Errorf("equeue %.200q still ran after a minute", args)
	}
	return r
}

// closedReader is a standard input that was closed.
type closedReader struct{}

func (closedReader) Read([]byte) (int, error) { return 0, os.ErrClosed }

// badValues are flag values and arguments no command expects.
var badValues = []string{
	"", "-1", "99999999999999999999", "1000", "200h", "bogus", "a\x00b", "%DLQ%x", strings.Repeat("n", 100_000),
}

// sweepBase is a command line per runnable command that gets as far as the
// command's own checks: the bad values go into it one at a time. serve,
// cluster and the global address flags are left out: their values reach
// the network (see TestServe_BadAddressesAndFiles).
var sweepBase = map[string][]string{
	"equeue":                             {},
	"equeue topic":                       {"topic"},
	"equeue topic create":                {"topic", "create", "sweep"},
	"equeue topic list":                  {"topic", "list"},
	"equeue topic describe":              {"topic", "describe", "orders"},
	"equeue topic add-queues":            {"topic", "add-queues", "orders", "1"},
	"equeue topic set-writable":          {"topic", "set-writable", "orders", "0", "true"},
	"equeue topic delete":                {"topic", "delete", "nosuch", "--yes"},
	"equeue topic set-limits":            {"topic", "set-limits", "orders"},
	"equeue produce":                     {"produce", "orders", "x"},
	"equeue consume":                     {"consume", "orders", "--timeout", "1ms"},
	"equeue groups":                      {"groups"},
	"equeue groups delete":               {"groups", "delete", "nosuch", "--yes"},
	"equeue reset-offsets":               {"reset-offsets", "g", "--to", "earliest"},
	"equeue dlq":                         {"dlq"},
	"equeue dlq list":                    {"dlq", "list", "g"},
	"equeue dlq redrive":                 {"dlq", "redrive", "g", "--all"},
	"equeue stats":                       {"stats"},
	"equeue bench":                       {"bench", "--count", "10", "--baseline=false"},
	"equeue peek":                        {"peek", "orders"},
	"equeue serve":                       nil,
	"equeue cluster":                     nil,
	"equeue cluster status":              nil,
	"equeue cluster add":                 nil,
	"equeue cluster remove":              nil,
	"equeue cluster transfer-leadership": nil,
}

// noSweep are flags whose values reach the network or run without end
// (consume --timeout 0 waits for messages for good).
var noSweep = map[string]bool{"server": true, "timeout@equeue consume": true, "admin": true, "duration": true, "count@equeue bench": true, "size@equeue bench": true,
	"producers@equeue bench": true, "consumers@equeue bench": true, "batch@equeue bench": true, "queues@equeue bench": true}

// invalidInputText is what the engine's refusals of a value say.
var invalidInputText = []string{"invalid argument:", "invalid name:", "invalid delay:", "invalid options:", "invalid tag filter:"}

// No command line panics, and every failed one says what was wrong on
// stderr, once, and prints nothing on stdout; a value the engine refuses as
// invalid is a usage error (exit code 2).
func TestCLI_BadInputNeverPanics(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders", "--queues", "2")
	ok(t, "--dir", dir, "consume", "orders", "--group", "g", "--timeout", "1ms")
	check := func(args []string, r result) {
		t.Helper()
		short := fmt.Sprintf("%.200q", args)
		assert.Contains(t, []int{exitOK, exitFailure, exitUsage}, r.code, short)
		if r.code == exitOK {
			return
		}
		assert.Empty(t, r.stdout, "%s failed (exit %d) but printed on stdout", short, r.code)
		assert.True(t, strings.HasPrefix(r.stderr, "equeue: "), "%s: stderr %.300q", short, r.stderr)
		assert.Equal(t, 1, strings.Count(r.stderr, "equeue: "), "%s: stderr %.300q", short, r.stderr)
		for _, s := range invalidInputText {
			if strings.Contains(r.stderr, s) {
				assert.Equal(t, exitUsage, r.code, "%s: a refused value is a usage error: %.300q", short, r.stderr)
			}
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		base, known := sweepBase[c.CommandPath()]
		assert.True(t, known, "%s has no command line in sweepBase", c.CommandPath())
		if base != nil {
			base = append([]string{"--dir", dir}, base...)
			// The command line itself, twice, with a flag given twice and
			// with an unknown flag.
			for _, args := range [][]string{base, base, append(slices.Clone(base), "--nosuch-flag"), append(slices.Clone(base), "--log-level", "info", "--log-level", "error")} {
				check(args, runBounded(t, nil, args...))
			}
			c.Flags().VisitAll(func(f *pflag.Flag) {
				if noSweep[f.Name] || noSweep[f.Name+"@"+c.CommandPath()] || f.Name == "help" || f.Name == "dir" {
					return
				}
				for _, v := range badValues {
					args := append(slices.Clone(base), "--"+f.Name+"="+v)
					check(args, runBounded(t, nil, args...))
				}
			})
			// Each positional argument replaced by each bad value.
			for i := 2; i < len(base); i++ {
				if strings.HasPrefix(base[i], "-") || strings.HasPrefix(base[i-1], "--") {
					continue
				}
				for _, v := range badValues {
					args := slices.Clone(base)
					args[i] = v
					check(args, runBounded(t, nil, args...))
				}
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newApp(nil, io.Discard, io.Discard).rootCommand())

	// produce's inputs: files that do not exist or are not files, a closed
	// standard input.
	missing := filepath.Join(t.TempDir(), "missing.txt")
	for _, args := range [][]string{
		{"produce", "orders", "--file", missing}, {"produce", "orders", "--file", dir}, {"produce", "orders", "--body-file", missing},
		{"produce", "orders", "--body-file", dir}, {"produce", "orders"}, {"produce", "orders", "-"}, {"produce", "orders", "--body-file", "-"},
	} {
		args = append([]string{"--dir", dir}, args...)
		r := runBounded(t, nil, args...)
		assert.NotEqual(t, exitOK, r.code, "%q", args)
		check(args, r)
	}
}

// A value the broker refuses as invalid, typed on the command line, is a
// usage error (exit code 2) whose message names the flag or argument.
func TestCLI_RefusedValuesAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := "--dir=" + dir
	ok(t, d, "topic", "create", "orders", "--queues", "2")
	ok(t, d, "produce", "orders", "a")
	ok(t, d, "consume", "orders", "--group", "g", "--from", "earliest", "--count", "1")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "add-queues", "orders", "1000"}, "queue count N 1000"},
		{[]string{"produce", "orders", "x", "--delay", "200h"}, "--delay 200h0m0s"},
		{[]string{"produce", "orders", "x", "--id", strings.Repeat("i", 5000)}, "--id"},
		{[]string{"consume", "orders", "--member", strings.Repeat("m", 300), "--timeout", "1ms"}, "--member"},
		{[]string{"consume", "orders", "--member", "a\x00b", "--timeout", "1ms"}, "--member"},
		{[]string{"reset-offsets", "g", "--offset", "orders/0=99"}, "--offset: invalid argument: offset 99 for orders/0"},
		{[]string{"topic", "create", "x", "--max-messages", "-1"}, "--max-messages"},
		{[]string{"topic", "set-limits", "orders", "--max-bytes", "-1"}, "--max-bytes"},
		{[]string{"topic", "set-limits", "orders", "--default-ttl", "-1s"}, "--default-ttl"},
	} {
		r := runBounded(t, nil, append([]string{d}, c.args...)...)
		assert.Equal(t, exitUsage, r.code, "%.100q: %v", c.args, r)
		assert.Contains(t, r.stderr, c.want, "%.100q", c.args)
		assert.Empty(t, r.stdout, "%.100q", c.args)
	}
	assert.Equal(t, []string{"a"}, bodies(jsonLines[messageJSON](t, ok(t, d, "peek", "orders", "--output", "json"))), "nothing refused was stored")
}

// serve refuses an address that is not HOST:PORT, and TLS files it
// cannot use, as usage errors, at once and before it creates its
// directory: "" would listen on every interface at a random port.
func TestServe_BadAddressesAndFiles(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	junk := filepath.Join(files, "junk.pem")
	require.NoError(t, os.WriteFile(junk, []byte("not a certificate\n"), 0o600))
	missing := filepath.Join(files, "missing.pem")
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	issue(t, files, "server", tmpl, nil, nil)
	cert, key := filepath.Join(files, "server.pem"), filepath.Join(files, "server-key.pem")

	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--listen", ""}, exitUsage, `--listen "": want HOST:PORT`},
		{[]string{"--listen", "bogus"}, exitUsage, `--listen "bogus": want HOST:PORT`},
		{[]string{"--listen", "127.0.0.1:99999"}, exitUsage, `--listen "127.0.0.1:99999"`},
		{[]string{"--listen", "127.0.0.1:http"}, exitUsage, `--listen "127.0.0.1:http"`},
		{[]string{"--metrics", "bogus"}, exitUsage, `--metrics "bogus"`},
		{[]string{"--console", "bogus"}, exitUsage, `--console "bogus"`},
		{[]string{"--kafka", "bogus"}, exitUsage, `--kafka "bogus"`},
		{[]string{"--pprof", "bogus"}, exitUsage, `--pprof "bogus"`},
		{[]string{"--cluster-id", "n1", "--cluster-raft", "bogus"}, exitUsage, `--cluster-raft "bogus"`},
		{[]string{"--tls-cert", missing, "--tls-key", missing}, exitUsage, "--tls-cert/--tls-key: open " + missing},
		{[]string{"--tls-cert", junk, "--tls-key", junk}, exitUsage, "--tls-cert/--tls-key: tls: failed to find any PEM data"},
		{[]string{"--tls-cert", files, "--tls-key", files}, exitUsage, "--tls-cert/--tls-key: read " + files},
		{[]string{"--tls-cert", cert, "--tls-key", cert}, exitUsage, "--tls-cert/--tls-key"},
		{[]string{"--tls-cert", cert, "--tls-key", key, "--client-ca", junk}, exitUsage, "--client-ca: " + junk + " holds no PEM certificate"},
		{[]string{"--tls-cert", cert, "--tls-key", key, "--client-ca", missing}, exitUsage, "--client-ca: read CA file: open " + missing},
		{[]string{"--tls-cert", cert}, exitUsage, "--tls-cert and --tls-key go together"},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		args := append([]string{"serve", "--dir", dir, "--log-level", "error"}, c.args...)
		if !slices.Contains(c.args, "--listen") {
			args = append(args, "--listen", freePort(t))
		}
		r := runBounded(t, nil, args...)
		assert.Equal(t, c.code, r.code, "%q: %v", c.args, r)
		assert.Contains(t, r.stderr, c.want, "%q", c.args)
		assert.Empty(t, r.stdout, "%q", c.args)
		assert.NoDirExists(t, dir, "%q: serve created its directory before failing", c.args)
	}
}
