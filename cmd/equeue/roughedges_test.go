package main

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snapshot is every file under dir with its size, modification time and
// content hash.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[path] = fmt.Sprintf("%d %d %x", fi.Size(), fi.ModTime().UnixNano(), sha256.Sum256(b))
		return nil
	})
	require.NoError(t, err)
	return out
}

// Read-only commands on an engine directory leave every byte of it as it
// was; on a directory that holds no engine they refuse and create nothing.
func TestCLI_ReadOnlyCommandsChangeNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := "--dir=" + dir
	ok(t, d, "topic", "create", "orders", "--queues", "2")
	ok(t, d, "produce", "orders", "a", "b", "c")
	ok(t, d, "consume", "orders", "--group", "g", "--from", "earliest", "--count", "3")
	before := snapshot(t, dir)
	readOnly := [][]string{
		{"topic", "list"}, {"topic", "describe", "orders"}, {"groups"}, {"groups", "g", "--json"},
		{"stats", "--scan"}, {"dlq", "list", "g"},
		{"peek", "orders"}, {"peek", "orders", "--queue", "1", "--output", "json"}, {"peek", "orders", "--time", "2000-01-01T00:00:00Z"},
	}
	for _, c := range readOnly {
		ok(t, append([]string{d}, c...)...)
	}
	assert.Equal(t, before, snapshot(t, dir), "a read-only command changed the engine directory")

	// A missing directory is not created, an empty one stays empty.
	missing := filepath.Join(t.TempDir(), "missing")
	empty := t.TempDir()
	for _, c := range readOnly {
		fails(t, 1, "does not exist", append([]string{"--dir=" + missing}, c...)...)
		fails(t, 1, "is empty, it holds no engine", append([]string{"--dir=" + empty}, c...)...)
	}
	assert.NoDirExists(t, missing)
	entries, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, entries)
}

// A directory with files of something else is refused by every command,
// the creating ones included, and keeps only its own files.
func TestCLI_ForeignDirectoryRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600))
	d := "--dir=" + dir
	for _, c := range [][]string{
		{"topic", "list"}, {"topic", "create", "orders"}, {"produce", "orders", "x"},
		{"consume", "orders", "--timeout", "1s"}, {"stats"}, {"bench", "--count", "10"},
	} {
		fails(t, 1, "is not an equeue engine directory (it holds notes.txt", append([]string{d}, c...)...)
	}
	r := cli(t, "serve", d, "--listen", freePort(t))
	require.Equal(t, 1, r.code, r.String())
	assert.Contains(t, r.stderr, "is not an equeue engine directory")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "notes.txt", entries[0].Name())
}

// serve takes its ports before it touches the directory: a busy --listen
// or --metrics port leaves no directory behind.
func TestServe_BusyPortCreatesNothing(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	for _, c := range [][]string{
		{"--listen", busy.Addr().String()},
		{"--listen", freePort(t), "--metrics", busy.Addr().String()},
	} {
		dir := filepath.Join(t.TempDir(), "data")
		r := cli(t, append([]string{"serve", "--dir", dir}, c...)...)
		require.Equal(t, 1, r.code, r.String())
		assert.Contains(t, r.stderr, "listen on "+busy.Addr().String())
		assert.NoDirExists(t, dir, "serve %v created its directory before failing", c)
	}
}

// An address nobody listens on is reported as such at once; one that is
// not HOST:PORT is a usage error.
func TestCLI_ServerNothingAnswers(t *testing.T) {
	t.Parallel()
	addr := freePort(t)
	r := cli(t, "--server", addr, "--connect-timeout", "30s", "topic", "list")
	require.Equal(t, 1, r.code, r.String())
	assert.Contains(t, r.stderr, "nothing answers at "+addr)
	assert.NotContains(t, r.stderr, "TRANSIENT_FAILURE")
	fails(t, 2, `--server "nonsense": want HOST:PORT`, "--server", "nonsense", "topic", "list")
}

// Errors name "equeue:" once, even when an engine error is wrapped.
func TestCLI_ErrorPrefixOnce(t *testing.T) {
	t.Parallel()
	d := "--dir=" + t.TempDir()
	ok(t, d, "topic", "create", "orders")
	r := cli(t, d, "produce", "nosuch", "hi")
	require.Equal(t, 1, r.code, r.String())
	assert.Contains(t, r.stderr, "equeue: message 1: topic not found")
	assert.Equal(t, 1, strings.Count(r.stderr, "equeue:"), r.stderr)
}

// Counts and queue numbers are checked, negative ones included.
func TestCLI_CountsAndNegativeArguments(t *testing.T) {
	t.Parallel()
	d := "--dir=" + t.TempDir()
	ok(t, d, "topic", "create", "orders", "--queues", "2")
	fails(t, 2, "--queues 0: a topic has 1 to 256 queues", d, "topic", "create", "x", "--queues", "0")
	fails(t, 2, "-1: negative numbers are not valid arguments of equeue topic add-queues", d, "topic", "add-queues", "orders", "-1")
	fails(t, 2, "-3: negative numbers are not valid arguments of equeue topic set-writable", d, "topic", "set-writable", "orders", "-3", "false")
	// Negative flag values still reach their flag's own check.
	fails(t, 2, "--count must not be negative", d, "consume", "orders", "--count", "-1")
	out := ok(t, d, "topic", "list")
	assert.NotContains(t, out, "x ", "no topic was made with --queues 0")
	assert.Contains(t, ok(t, d, "topic", "describe", "orders", "--json"), `"id": 1`)
	assert.NotContains(t, ok(t, d, "topic", "describe", "orders", "--json"), `"id": 2`)
}

// topic delete asks on a terminal and needs --yes otherwise.
func TestCLI_TopicDeleteNeedsConfirmation(t *testing.T) {
	t.Parallel()
	d := "--dir=" + t.TempDir()
	ok(t, d, "topic", "create", "orders")
	ok(t, d, "produce", "orders", "keep me")
	fails(t, 2, "confirm with --yes", d, "topic", "delete", "orders")
	assert.Contains(t, ok(t, d, "topic", "list"), "orders", "the topic survived an unconfirmed delete")
	assert.Contains(t, ok(t, d, "topic", "delete", "orders", "--yes"), "deleted topic orders")
	assert.NotContains(t, ok(t, d, "topic", "list"), "orders")
}

// groups delete, like topic delete, asks only on a terminal: from a pipe
// or a script it refuses without --yes, rather than waiting for a line or
// taking one piped in as the answer, and deletes nothing.
func TestCLI_GroupsDeleteNeedsYesWithoutATerminal(t *testing.T) {
	t.Parallel()
	d := "--dir=" + t.TempDir()
	ok(t, d, "topic", "create", "orders")
	ok(t, d, "produce", "orders", "a")
	ok(t, d, "consume", "orders", "--group", "billing", "--from", "earliest", "--count", "1")
	for _, in := range []string{"y\n", ""} {
		r := cliIn(t, in, d, "groups", "delete", "billing")
		assert.Equal(t, 2, r.code, "stdin %q: %v", in, r)
		assert.Contains(t, r.stderr, "--yes", "stdin %q: the error says how to confirm", in)
		assert.Contains(t, ok(t, d, "groups"), "billing", "stdin %q: the group survived an unconfirmed delete", in)
	}
	assert.Contains(t, ok(t, d, "groups", "delete", "billing", "--yes"), "deleted group billing")
	assert.NotContains(t, ok(t, d, "groups"), "billing")
}

// consume says where a new group starts, and only for a new group.
func TestCLI_ConsumeNewGroupSaysWhereItStarts(t *testing.T) {
	t.Parallel()
	d := "--dir=" + t.TempDir()
	ok(t, d, "topic", "create", "orders")
	ok(t, d, "produce", "orders", "old")
	r := cli(t, d, "consume", "orders", "--group", "brandnew", "--timeout", "1s")
	require.Equal(t, 0, r.code, r.String())
	assert.Empty(t, r.stdout, "a latest group skips what is stored")
	assert.Contains(t, r.stderr, "new group brandnew starts at the end of each queue (--from latest)")
	assert.Contains(t, r.stderr, "--from earliest reads what is stored")
	r = cli(t, d, "consume", "orders", "--group", "brandnew", "--timeout", "1s")
	require.Equal(t, 0, r.code, r.String())
	assert.NotContains(t, r.stderr, "new group", "the group exists now")
	r = cli(t, d, "consume", "orders", "--group", "other", "--from", "earliest", "--count", "1")
	require.Equal(t, 0, r.code, r.String())
	assert.Contains(t, r.stderr, "new group other starts at the oldest stored message")
	assert.Contains(t, r.stdout, "old")
}

// dlq list and dlq redrive agree on an unknown group: both fail and point
// at the list of groups, not at creating a topic.
func TestCLI_DLQUnknownGroup(t *testing.T) {
	t.Parallel()
	d := "--dir=" + t.TempDir()
	ok(t, d, "topic", "create", "orders")
	for _, c := range [][]string{{"dlq", "list", "nosuch"}, {"dlq", "list", "nosuch", "--json"}, {"dlq", "redrive", "nosuch", "--all"}} {
		r := cli(t, append([]string{d}, c...)...)
		require.Equal(t, 1, r.code, r.String())
		assert.Contains(t, r.stderr, `group not found: "nosuch"`)
		assert.Contains(t, r.stderr, `list groups with "equeue groups"`)
		assert.NotContains(t, r.stderr, "topic create")
	}
	// A group that exists but never dead-lettered: an empty list, nothing
	// to redrive, and no such offset.
	ok(t, d, "consume", "orders", "--group", "g", "--timeout", "1s")
	assert.Contains(t, ok(t, d, "dlq", "list", "g"), "no dead letters for group g")
	assert.Contains(t, ok(t, d, "dlq", "redrive", "g", "--all"), "redrove 0 dead letters")
	fails(t, 1, "group g has no dead letters", d, "dlq", "redrive", "g", "--offset", "0")
}

// serve logs refused calls at warn level, with the reason and the caller.
func TestServe_LogsRefusedCalls(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders")
	addr, maddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--metrics", maddr, "--token", "app=produce")
	eventually(t, 20*time.Second, "serve's /healthz", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	fails(t, 1, "unknown token", "--server", addr, "--token", "wrong", "topic", "list")
	fails(t, 1, "permission denied", "--server", addr, "--token", "app", "topic", "list")
	eventually(t, 10*time.Second, "two refusals in serve's log", func() bool {
		return strings.Count(srv.stderr.String(), `msg="call refused"`) >= 2
	})
	log := srv.stderr.String()
	assert.Contains(t, log, "level=WARN")
	assert.Contains(t, log, "unknown token")
	assert.Contains(t, log, "needs admin rights")
	assert.Contains(t, log, "peer=127.0.0.1:")
	assert.NotContains(t, log, "wrong", "the token itself is not logged")
	assert.Equal(t, 0, srv.stop(t))
}

// A subcommand's --help lists the global flags by name only, and no flag
// help shows a Go type name or an empty default.
func TestCLI_HelpIsShort(t *testing.T) {
	t.Parallel()
	commands := [][]string{
		{"serve"}, {"topic"}, {"topic", "create"}, {"topic", "list"}, {"topic", "describe"}, {"topic", "add-queues"},
		{"topic", "set-writable"}, {"topic", "delete"}, {"produce"}, {"consume"}, {"groups"}, {"reset-offsets"},
		{"dlq"}, {"dlq", "list"}, {"dlq", "redrive"}, {"stats"}, {"bench"},
	}
	for _, c := range commands {
		out := ok(t, append(c, "--help")...)
		name := strings.Join(c, " ")
		assert.NotContains(t, out, "Global Flags:", name)
		assert.Contains(t, out, `Global flags (see "equeue --help"):`, name)
		assert.NotContains(t, out, "bearer token sent to the server", "%s repeats a global flag's help", name)
		for _, leak := range []string{"Slice", "Array", "int64", "(default [])", "(default )"} {
			assert.NotContains(t, out, leak, name)
		}
	}
	root := ok(t, "--help")
	assert.Contains(t, root, "bearer token sent to the server", "the root help explains the global flags")
}

// After a crash a read-only command refuses with the remedy instead of
// repairing the directory; a command that writes recovers it.
func TestCLI_ReadOnlyAfterACrash(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := "--dir=" + dir
	ok(t, d, "topic", "create", "orders")
	maddr := freePort(t)
	srv := startServe(t, d, "--listen", freePort(t), "--metrics", maddr)
	eventually(t, 20*time.Second, "serve's /healthz", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + maddr + "/healthz")
		return err == nil && code == http.StatusOK
	})
	require.NoError(t, srv.cmd.Process.Kill())
	<-srv.done

	before := snapshot(t, dir)
	r := cli(t, d, "topic", "list")
	if r.code == 0 {
		t.Log("Badger found nothing to repair after the kill")
		// Badger found nothing to repair; then the open must still
		// have changed nothing.
		assert.Equal(t, before, snapshot(t, dir))
		return
	}
	require.Equal(t, 1, r.code, r.String())
	assert.Contains(t, r.stderr, "was not closed cleanly")
	assert.Contains(t, r.stderr, "equeue serve --dir "+dir)
	assert.Equal(t, before, snapshot(t, dir), "the refused command changed the directory")
	ok(t, d, "produce", "orders", "after the crash")
	assert.Contains(t, ok(t, d, "topic", "list"), "orders")
}

// The question topic delete asks on a terminal takes only y or yes.
func TestCLI_ConfirmAnswers(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{"y\n": true, "YES\n": true, " yes ": true, "n\n": false, "\n": false, "": false, "yep\n": false} {
		var stderr strings.Builder
		a := newApp(strings.NewReader(in), io.Discard, &stderr)
		got, err := a.confirm("Delete? [y/N] ")
		require.NoError(t, err)
		assert.Equal(t, want, got, "answer %q", in)
		assert.Equal(t, "Delete? [y/N] ", stderr.String())
		assert.False(t, a.stdinIsTerminal(), "a reader is no terminal")
	}
}
