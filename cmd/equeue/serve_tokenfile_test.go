package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// writeTokenFile writes a token file with the given mode (whatever the
// umask) and returns its path.
func writeTokenFile(t *testing.T, dir, name, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(body), mode))
	require.NoError(t, os.Chmod(p, mode))
	return p
}

// --token-file admits the tokens of its lines with their rights, as
// --token does, beside those of --token; comments, blank lines and the
// white space around a line are skipped. serve logs the files' paths, never
// their tokens, and warns about a file that group or others may read.
func TestServe_TokenFileAdmitsItsTokensWithTheirRights(t *testing.T) {
	t.Parallel()
	dir, files := t.TempDir(), t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders", "--queues", "2")
	private := writeTokenFile(t, files, "private-tokens", "# equeue's tokens\n\n   \n  writer-7f3a=produce  \r\n\treader-9c1e=consume\n# old-0d2b=all\ntenant-5b8e=all@team-a\n", 0o600)
	shared := writeTokenFile(t, files, "shared-tokens", "ops-2e6d=all\n", 0o644)
	addr, maddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--metrics", maddr, "--log-format", "json",
		"--token-file", private, "--token", "flag-4a1c=admin", "--token-file", shared)
	eventually(t, 20*time.Second, "serve's /healthz", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	as := func(tok string, args ...string) []string {
		return append([]string{"--server", addr, "--token", tok}, args...)
	}

	// A produce-only token of the file produces, but creates no topic and
	// consumes nothing.
	ok(t, as("writer-7f3a", "produce", "orders", "m1")...)
	fails(t, 1, "permission denied", as("writer-7f3a", "topic", "create", "other")...)
	fails(t, 1, "permission denied", as("writer-7f3a", "consume", "orders", "--timeout", "1s")...)
	// A consume-only one consumes, and produces nothing.
	out := ok(t, as("reader-9c1e", "consume", "orders", "--from", "earliest", "--count", "1", "--output", "body", "--timeout", "20s")...)
	assert.Equal(t, "m1\n", out)
	fails(t, 1, "permission denied", as("reader-9c1e", "produce", "orders", "x")...)
	// The second file's and the flag's tokens are admitted too.
	ok(t, as("ops-2e6d", "topic", "list")...)
	ok(t, as("flag-4a1c", "topic", "list")...)
	// A scoped line is scoped: its token sees its namespace only.
	ok(t, as("tenant-5b8e", "topic", "create", "mine")...)
	topics := decode[[]topicJSON](t, ok(t, as("tenant-5b8e", "topic", "list", "--json")...))
	require.Len(t, topics, 1)
	assert.Equal(t, "mine", topics[0].Name)
	// A commented-out line is no token, nor is a whole line with its rights.
	fails(t, 1, "unauthenticated", as("old-0d2b", "topic", "list")...)
	fails(t, 1, "unauthenticated", as("writer-7f3a=produce", "produce", "orders", "x")...)

	require.Equal(t, 0, srv.stop(t), "serve's log:\n%s", srv.stderr)
	log := srv.stderr.String()
	assert.Contains(t, log, `"tokens":5`)
	assert.Contains(t, log, private)
	assert.Contains(t, log, shared)
	var warned []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, `"level":"WARN"`) && strings.Contains(line, "group or others") {
			warned = append(warned, line)
		}
	}
	require.Len(t, warned, 1, "one warning, about the file others may read:\n%s", log)
	assert.Contains(t, warned[0], shared)
	for _, tok := range []string{"writer-7f3a", "reader-9c1e", "tenant-5b8e", "ops-2e6d", "flag-4a1c"} {
		assert.NotContains(t, log, tok, "serve's log shows a token")
	}
}

// A token file that cannot be used is a usage error, refused before serve
// takes a port or creates its directory: a line that is no
// TOKEN=RIGHTS[@NAMESPACE] names the file and line but never the token, a
// file that cannot be read names the flag, a file without a token is
// refused (an empty secret would otherwise open the server to everyone),
// and a token given twice, in files or flags, is refused as two equal
// --token flags are.
func TestServe_TokenFileErrorsNameTheLineNotTheToken(t *testing.T) {
	t.Parallel()
	files := t.TempDir()
	const secret = "s3cret-0123456789"
	good := writeTokenFile(t, files, "good", "# ok\n"+secret+"=all\n", 0o600)
	for _, tc := range []struct {
		name, body string
		flags      []string
		want       []string
	}{
		{name: "no-rights", body: "# tokens\n\nok-1=produce\n" + secret + "\n", want: []string{"no-rights:4:", "want TOKEN=RIGHTS"}},
		{name: "empty-rights", body: secret + "=\n", want: []string{"empty-rights:1:", "want TOKEN=RIGHTS"}},
		{name: "bad-right", body: "\n  " + secret + "=produce,bogus  \n", want: []string{"bad-right:2:", "unknown right"}},
		{name: "bad-namespace", body: secret + "=all@bad:ns\n", want: []string{"bad-namespace:1:", "namespace"}},
		{name: "only-comments", body: "# " + secret + "=all\n\n", want: []string{"only-comments", "no token"}},
		{name: "empty", body: "", want: []string{"empty", "no token"}},
		{name: "twice-in-file", body: "a-1=all\n" + secret + "=produce\n" + secret + "=consume\n", want: []string{"twice-in-file:3:", "given twice", "twice-in-file:2"}},
		{name: "twice-with-flag", body: secret + "=produce\n", flags: []string{"--token", secret + "=consume"}, want: []string{"given twice", "--token"}},
		{name: "twice-across-files", body: "\n" + secret + "=produce\n", flags: []string{"--token-file", good}, want: []string{"given twice", good + ":2", "twice-across-files:2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTokenFile(t, files, tc.name, tc.body, 0o600)
			dir := filepath.Join(t.TempDir(), "data")
			args := append([]string{"serve", "--dir", dir, "--listen", freePort(t), "--token-file", p}, tc.flags...)
			r := cli(t, args...)
			require.Equal(t, exitUsage, r.code, "%v", r)
			for _, w := range tc.want {
				assert.Contains(t, r.stderr, w)
			}
			assert.NotContains(t, r.stderr, secret[:8], "the error shows the token")
			assert.NoDirExists(t, dir, "serve created its directory")
		})
	}
	t.Run("missing", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		missing := filepath.Join(files, "missing")
		r := cli(t, "serve", "--dir", dir, "--listen", freePort(t), "--token-file", missing)
		require.Equal(t, exitUsage, r.code, "%v", r)
		assert.Contains(t, r.stderr, "--token-file "+missing)
		assert.NoDirExists(t, dir, "serve created its directory")
	})
}
