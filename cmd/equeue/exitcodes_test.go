package main

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProduce_InputContentProblemsExit1: what produce finds wrong in its
// input while reading it (no non-empty line, an empty or oversized
// --body-file, an oversized line) fails the operation, exit code 1, as a
// message the broker refuses does; exit code 2 stays for a wrong command
// line. Before, an empty input and an empty or oversized --body-file
// exited 2 while an oversized line of --file exited 1.
func TestProduce_InputContentProblemsExit1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "lines", "--queues", "1")
	files := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(files, name)
		require.NoError(t, os.WriteFile(p, b, 0o600))
		return p
	}
	empty := write("empty.txt", nil)
	blank := write("blank.txt", []byte("\n\n"))
	big := write("big.bin", make([]byte, maxLine+1))
	longLine := write("long.txt", append(append([]byte("ok\n"), make([]byte, maxLine+1)...), '\n'))
	for _, c := range []struct {
		stdin string
		args  []string
		want  string
	}{
		{"", []string{"produce", "lines"}, "no message to send"},
		{"\n\n", []string{"produce", "lines"}, "no message to send"},
		{"", []string{"produce", "lines", "--file", blank}, "no message to send"},
		{"", []string{"produce", "lines", "--body-file", empty}, "is empty"},
		{"", []string{"produce", "lines", "--body-file", "-"}, "is empty"},
		{"", []string{"produce", "lines", "--body-file", big}, "larger than"},
		{"", []string{"produce", "lines", "--file", longLine}, "longer than"},
	} {
		r := cliIn(t, c.stdin, append([]string{"--dir", dir}, c.args...)...)
		assert.Equal(t, 1, r.code, "%q: %v", c.args, r)
		assert.Contains(t, r.stderr, c.want, "%q", c.args)
		assert.NotContains(t, r.stderr, "--help' for usage", "%q", c.args)
	}
}

// TestConsume_InterruptBeforeCountExits1: Ctrl-C (or SIGTERM) stopping a
// consume --count N before N messages were printed exits 1, as --timeout
// does and as an interrupted produce does: the printed messages are
// committed, and the error says how many of N were printed. Without
// --count, Ctrl-C is the way to stop consume, and it exits 0. Before, an
// interrupt before N exited 0.
func TestConsume_InterruptBeforeCountExits1(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t", "--queues", "1")
	ok(t, "--dir", dir, "produce", "t", "one")

	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"--count", "5", "--group", "counted"}, 1},
		{[]string{"--group", "open-ended"}, 0},
	} {
		p := startProduce(t, append([]string{"--dir", dir, "consume", "t", "--from", "earliest", "--output", "body"}, c.args...)...)
		eventually(t, 20*time.Second, "the first message printed", func() bool { return p.stdout.String() == "one\n" })
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGINT))
		assert.Equal(t, c.code, p.exitCode(t), "%q: %s", c.args, p.stderr)
		if c.code != 0 {
			assert.Contains(t, p.stderr.String(), "interrupted: printed 1 of 5")
		}
	}
	// What was printed was committed either way.
	for _, g := range []string{"counted", "open-ended"} {
		r := cli(t, "--dir", dir, "consume", "t", "--group", g, "--timeout", "300ms")
		assert.Equal(t, 0, r.code, r.String())
		assert.Empty(t, r.stdout, "group %s", g)
	}
	// --timeout before N is a failure as well.
	r := cli(t, "--dir", dir, "consume", "t", "--group", "later", "--from", "earliest", "--count", "2", "--timeout", "300ms")
	assert.Equal(t, 1, r.code, r.String())
	assert.Contains(t, r.stderr, "printed 1 of 2")
}

// TestCluster_MalformedAdminIsAUsageError: an --admin (or
// $EQUEUE_CLUSTER_ADMIN) that is not HOST:PORT is a usage error, exit code
// 2, naming the flag. Before, it was tried as a URL and failed with exit
// code 1.
func TestCluster_MalformedAdminIsAUsageError(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"not an address", "127.0.0.1", "host:port/path", ":7851:1"} {
		r := cli(t, "cluster", "status", "--admin", addr)
		assert.Equal(t, 2, r.code, "%q: %v", addr, r)
		assert.Contains(t, r.stderr, "--admin", "%q", addr)
	}
}

// TestConsume_StopsAtARecordOfANewerFormat: consume of a queue that holds
// a record of a newer format version (which this build can never read)
// prints the messages before it, commits them, and exits 1 naming the
// queue, the offset and the format version. Before, it retried the fetch
// forever, logging a warning every 200 ms, until --timeout (then exit 0).
func TestConsume_StopsAtARecordOfANewerFormat(t *testing.T) {
	t.Parallel()
	dir := newerFormatDir(t)
	r := cli(t, "--dir", dir, "consume", "t", "--from", "earliest", "--output", "body", "--timeout", "5s")
	assert.Equal(t, 1, r.code, r.String())
	assert.Equal(t, "before\n", r.stdout)
	assert.Contains(t, r.stderr, "t/0 at 1")
	assert.Contains(t, r.stderr, "unsupported record format version")
	assert.Contains(t, r.stderr, "version")
	assert.NotContains(t, r.stderr, "retrying")
	// "before" was committed: the next consume of the group stops at once.
	r = cli(t, "--dir", dir, "consume", "t", "--output", "body", "--timeout", "5s")
	assert.Equal(t, 1, r.code, r.String())
	assert.Empty(t, r.stdout)
	assert.True(t, strings.Contains(r.stderr, "t/0 at 1"), r.String())
}

// TestServe_SecondSignalForcesTheShutdown: a second SIGINT (or SIGTERM)
// while serve waits for the calls in progress stops that wait at once: the
// connections are cut, the engine is still closed cleanly (so every
// acknowledged send is kept, and read-only commands open the directory
// without recovery), and serve exits 1, saying so. Before, the second
// signal was ignored and serve exited 0 after its grace period.
func TestServe_SecondSignalForcesTheShutdown(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t", "--queues", "1")
	addr := freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr)
	eventually(t, 20*time.Second, "serve answers", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		return cli(t, "--server", addr, "produce", "t", "acknowledged").code == 0
	})
	holdGracefulStop(t, addr)

	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGINT))
	eventually(t, 20*time.Second, "the shutdown under way", func() bool {
		return strings.Contains(srv.stderr.String(), "signal received, shutting down")
	})
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-srv.done:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not exit; its log:\n%s", srv.stderr)
	}
	var ee *exec.ExitError
	require.ErrorAs(t, srv.err, &ee, srv.stderr.String())
	assert.Equal(t, 1, ee.ExitCode(), srv.stderr.String())
	assert.Contains(t, srv.stderr.String(), "second signal")
	assert.Contains(t, srv.stderr.String(), `msg="engine closed" err=<nil>`)
	// Closed cleanly: a read-only command opens it, and the send is kept.
	assert.Equal(t, "acknowledged\n", ok(t, "--dir", dir, "peek", "t", "--output", "body"))
}

// holdGracefulStop opens an HTTP/2 connection to addr that will never
// answer the server's GOAWAY, so that a graceful stop waits for it until
// its grace period ends. It returns once the server serves the connection
// (it answered a PING).
func holdGracefulStop(t *testing.T, addr string) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = nc.Close() })
	preface := "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	settings := []byte{0, 0, 0, 4, 0, 0, 0, 0, 0}
	ping := []byte{0, 0, 8, 6, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8}
	_, err = nc.Write(append(append([]byte(preface), settings...), ping...))
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(20*time.Second)))
	for {
		var h [9]byte
		_, err := io.ReadFull(nc, h[:])
		require.NoError(t, err, "waiting for the server's PING answer")
		n := int(h[0])<<16 | int(h[1])<<8 | int(h[2])
		_, err = io.ReadFull(nc, make([]byte, n))
		require.NoError(t, err)
		if h[3] == 6 && h[4]&1 == 1 { // PING with ACK
			require.NoError(t, nc.SetReadDeadline(time.Time{}))
			return
		}
	}
}

// TestTLSFiles_UnreadableOrNotPEMIsAUsageError: a --tls-ca, --tls-cert,
// --tls-key or --client-ca file that cannot be read, or holds no
// certificate or key, is a usage error, exit code 2, naming the flag, as
// an unreadable --token-file or --cluster-secret-file is; for serve and
// for a client command alike. Before, it exited 1.
func TestTLSFiles_UnreadableOrNotPEMIsAUsageError(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	missing := filepath.Join(files, "missing.pem")
	notPEM := filepath.Join(files, "not.pem")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600))
	now := time.Now()
	issue(t, files, "server", &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
	}, nil, nil)
	cert, key := filepath.Join(files, "server.pem"), filepath.Join(files, "server-key.pem")
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--server", "127.0.0.1:1", "--tls-ca", missing, "topic", "list"}, "--tls-ca"},
		{[]string{"--server", "127.0.0.1:1", "--tls-ca", notPEM, "topic", "list"}, "--tls-ca"},
		{[]string{"--server", "127.0.0.1:1", "--tls-cert", missing, "--tls-key", missing, "topic", "list"}, "--tls-cert/--tls-key"},
		{[]string{"--server", "127.0.0.1:1", "--tls-cert", notPEM, "--tls-key", notPEM, "topic", "list"}, "--tls-cert/--tls-key"},
		{[]string{"--server", "127.0.0.1:1,127.0.0.1:2", "--tls-ca", missing, "topic", "list"}, "--tls-ca"},
		{[]string{"--dir", dir, "--tls-cert", missing, "--tls-key", missing, "serve", "--listen", "127.0.0.1:0"}, "--tls-cert/--tls-key"},
		{[]string{"--dir", dir, "--tls-cert", notPEM, "--tls-key", notPEM, "serve", "--listen", "127.0.0.1:0"}, "--tls-cert/--tls-key"},
		{[]string{"--dir", dir, "--tls-cert", cert, "--tls-key", key, "serve", "--listen", "127.0.0.1:0", "--client-ca", missing}, "--client-ca"},
		{[]string{"--dir", dir, "--tls-cert", cert, "--tls-key", key, "serve", "--listen", "127.0.0.1:0", "--client-ca", notPEM}, "--client-ca"},
	} {
		r := cli(t, c.args...)
		assert.Equal(t, 2, r.code, "%q: %v", c.args, r)
		assert.Contains(t, r.stderr, c.flag, "%q", c.args)
	}
}
