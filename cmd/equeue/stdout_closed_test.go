package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runReadingOneLine runs the binary with args and stdin, reads the first
// line of its standard output, then closes the pipe's reading end, as
// "equeue ... | head -1" does, and returns how the process ended.
func runReadingOneLine(t *testing.T, stdin string, args ...string) (first string, state *os.ProcessState, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(stdin)
	errBuf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = w, errBuf
	require.NoError(t, cmd.Start())
	require.NoError(t, w.Close()) // the child holds its own copy
	first, err = bufio.NewReader(r).ReadString('\n')
	require.NoError(t, err, "stderr:\n%s", errBuf.String())
	require.NoError(t, r.Close())
	_ = cmd.Wait() // its exit status is in ProcessState
	require.NoError(t, ctx.Err(), "the command still ran after a minute")
	return first, cmd.ProcessState, errBuf.String()
}

// TestCLI_ClosedStdoutClosesTheDirectory: a command on a directory whose
// standard output is closed before it is done ("equeue ... | head -1") is
// not killed by SIGPIPE with the directory open: its write fails, it
// stops as on any failed write (exit code 1) and closes the directory, so
// read-only commands open it afterwards (they refuse a directory that was
// not closed cleanly); consume commits what it wrote and leaves its group.
// Before, the process died of SIGPIPE (exit status 141 in a shell), and
// every read-only command refused the directory until a writing command
// recovered it.
func TestCLI_ClosedStdoutClosesTheDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "t", "--queues", "1")
	var lines strings.Builder
	for i := range 20000 {
		lines.WriteString(strings.Repeat("x", 20))
		lines.WriteString(strings.Repeat("y", i%7))
		lines.WriteByte('\n')
	}

	t.Run("produce", func(t *testing.T) {
		first, state, stderr := runReadingOneLine(t, lines.String(), "--dir", dir, "produce", "t")
		assert.True(t, strings.HasPrefix(first, "queue=0 offset=0 "), first)
		assert.Equal(t, 1, state.ExitCode(), "%v; stderr:\n%s", state, stderr)
		assert.Contains(t, stderr, "broken pipe")
		ok(t, "--dir", dir, "stats")
	})

	t.Run("consume", func(t *testing.T) {
		// Its own topic, filled beforehand: the produce above stores only
		// what it sent before its write failed, which on a busy machine may
		// print to the pipe whole, before the reader closes it, leaving
		// consume nothing more to write. 20,000 lines are far more than a
		// pipe holds.
		ok(t, "--dir", dir, "topic", "create", "c", "--queues", "1")
		if r := cliIn(t, lines.String(), "--dir", dir, "produce", "c"); r.code != 0 {
			t.Fatalf("filling c: %v", r)
		}
		first, state, stderr := runReadingOneLine(t, "", "--dir", dir, "consume", "c", "--from", "earliest", "--timeout", "10s")
		assert.True(t, strings.HasPrefix(first, "c/0:0  "), first)
		assert.Equal(t, 1, state.ExitCode(), "%v; stderr:\n%s", state, stderr)
		assert.Contains(t, stderr, "broken pipe")
		g := decode[groupJSON](t, ok(t, "--dir", dir, "groups", "equeue-cli", "--json"))
		assert.Empty(t, g.Members, "consume left its group")
		require.Len(t, g.Queues, 1)
		assert.Positive(t, g.Queues[0].Committed, "consume committed what it wrote")
	})
}
