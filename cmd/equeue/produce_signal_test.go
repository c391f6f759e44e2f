package main

import (
	"errors"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// producer is a running "equeue produce" whose standard input the test
// writes to and does not close.
type producer struct {
	cmd            *exec.Cmd
	stdin          io.WriteCloser
	stdout, stderr *syncBuffer
	code           chan int
}

// startProduce starts the binary with args (a produce command line).
func startProduce(t *testing.T, args ...string) *producer {
	t.Helper()
	p := &producer{stdout: &syncBuffer{}, stderr: &syncBuffer{}, code: make(chan int, 1)}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = cleanEnv()
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	var err error
	p.stdin, err = p.cmd.StdinPipe()
	require.NoError(t, err)
	require.NoError(t, p.cmd.Start())
	go func() {
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			p.code <- ee.ExitCode()
		case err != nil:
			p.code <- -1
		default:
			p.code <- 0
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.stdin.Close()
	})
	return p
}

// exitCode waits for the process to exit, its input still open.
func (p *producer) exitCode(t *testing.T) int {
	t.Helper()
	select {
	case c := <-p.code:
		return c
	case <-time.After(10 * time.Second):
		t.Fatalf("produce still waits for its input; stderr:\n%s", p.stderr)
		return -1
	}
}

// SIGTERM (or Ctrl-C) ends a produce that waits for more input, as does
// --timeout: the lines read were sent and printed, and it exits 1.
func TestProduce_SignalEndsAWaitForInput(t *testing.T) {
	forCLITransports(t, func(t *testing.T, _ string, at []string) {
		with := func(args ...string) []string { return append(append([]string{}, at...), args...) }
		ok(t, with("topic", "create", "lines", "--queues", "1")...)

		p := startProduce(t, with("produce", "lines")...)
		_, err := io.WriteString(p.stdin, "first\n")
		require.NoError(t, err)
		// Printed once sent, and the signal handler is installed before
		// the first line is read.
		eventually(t, 20*time.Second, "the first line's result", func() bool { return strings.Contains(p.stdout.String(), "offset=0") })
		require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
		assert.Equal(t, 1, p.exitCode(t), p.stderr.String())
		assert.Contains(t, p.stderr.String(), "interrupted while waiting for input")
		assert.Equal(t, []string{"first"}, bodies(jsonLines[messageJSON](t, ok(t, with("peek", "lines", "--output", "json")...))))

		p = startProduce(t, with("produce", "lines", "--timeout", "200ms")...)
		assert.Equal(t, 1, p.exitCode(t), p.stderr.String())
		assert.Contains(t, p.stderr.String(), "--timeout")
	})
}
