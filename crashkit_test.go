package equeue_test

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// The kill tests run this test binary again as a child process that runs
// one test function of it (its workload) on a directory, read the lines
// it prints, kill it with SIGKILL at a moment drawn from a seeded source,
// and reopen the directory. A child test does nothing unless started so
// (crashChildDir).

// Variables of a child's environment: the test it runs, its directory and
// the parent's round.
const (
	crashKitChildEnv = "EQUEUE_CRASHKIT_CHILD"
	crashKitDirEnv   = "EQUEUE_CRASHKIT_DIR"
	crashKitRoundEnv = "EQUEUE_CRASH_ROUND"
)

// crashKitWait bounds every wait for a child: to be ready, to end.
const crashKitWait = 2 * time.Minute

// crashChildDir returns the directory the child test t works on, and
// skips t unless this process was started to run it.
func crashChildDir(t *testing.T) string {
	if os.Getenv(crashKitChildEnv) != t.Name() {
		t.Skip("child process of a kill test")
	}
	return os.Getenv(crashKitDirEnv)
}

// crashChildRound is the parent's round the child runs in.
func crashChildRound() int {
	n, _ := strconv.Atoi(os.Getenv(crashKitRoundEnv))
	return n
}

// childSay returns a child process's printer of output lines, safe for
// its goroutines.
func childSay() func(format string, args ...any) {
	var mu sync.Mutex
	return func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		_, _ = fmt.Fprintf(os.Stdout, format+"\n", args...)
	}
}

// crashRounds is EQUEUE_CRASH_ROUNDS, or def.
func crashRounds(t *testing.T, def int) int {
	t.Helper()
	v := os.Getenv("EQUEUE_CRASH_ROUNDS")
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	require.NoError(t, err, "EQUEUE_CRASH_ROUNDS")
	return n
}

// crashRand is the source of a kill test's random moments (and of what
// else it draws): seeded by EQUEUE_CRASH_SEED, or by the clock. The seed
// is logged, so a failed run names it.
func crashRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("EQUEUE_CRASH_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "EQUEUE_CRASH_SEED")
		seed = n
	}
	t.Logf("EQUEUE_CRASH_SEED=%d", seed)
	return rand.New(rand.NewPCG(seed, 0))
}

// crashReopen opens dir after a kill with open (equeue.Open's defaults
// when nil).
func crashReopen(t *testing.T, dir string, round int, open func(dir string) (*equeue.Engine, error)) *equeue.Engine {
	t.Helper()
	if open == nil {
		open = func(dir string) (*equeue.Engine, error) { return equeue.Open(dir, nil) }
	}
	e, err := open(dir)
	require.NoError(t, err, "round %d: reopen after SIGKILL", round)
	return e
}

// crashChildSpec says what a child runs and what its parent does with its
// output.
type crashChildSpec struct {
	// Test is the child's test function.
	Test string
	// Dir is the directory it works on; Round, the parent's round.
	Dir   string
	Round int
	// Env are more variables of its environment, each "NAME=value".
	Env []string
	// Ready is the line that says the child is ready ("READY" when
	// empty); Ready closes the channel crashChild.ready gives.
	Ready string
	// Line takes each other line of the child's output, in order, on one
	// goroutine; an error it returns fails the test once the child is
	// gone. Lines starting with "ERROR" are such errors, not given to
	// Line. Nil: the lines are only kept for the failure messages.
	Line func(string) error
}

// crashChild is a child process running one test of this binary.
type crashChild struct {
	t     *testing.T
	spec  crashChildSpec
	cmd   *exec.Cmd
	ready chan struct{} // closed at the spec's Ready line
	done  chan struct{} // closed once its output was read to its end
	// waited is closed once the process was reaped; waitErr is then its
	// exit.
	waited  chan struct{}
	waitErr error
	stderr  *crashTail

	mu   sync.Mutex // guards what follows, written by the reader
	tail []string   // the last lines of its output
	errs []error
}

// startCrashChild starts a child running s.Test; the test's cleanup kills
// it if it is still running.
func startCrashChild(t *testing.T, s crashChildSpec) *crashChild {
	t.Helper()
	if s.Ready == "" {
		s.Ready = "READY"
	}
	c := &crashChild{t: t, spec: s, ready: make(chan struct{}), done: make(chan struct{}), waited: make(chan struct{}), stderr: &crashTail{max: 4096}}
	c.cmd = exec.Command(os.Args[0], "-test.run", "^"+s.Test+"$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), crashKitChildEnv+"="+s.Test, crashKitDirEnv+"="+s.Dir, fmt.Sprintf("%s=%d", crashKitRoundEnv, s.Round))
	c.cmd.Env = append(c.cmd.Env, s.Env...)
	c.cmd.Stderr = c.stderr
	out, err := c.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, c.cmd.Start(), "start the child running %s", s.Test)
	go c.read(bufio.NewScanner(out))
	go func() {
		<-c.done // Wait closes the pipe: read it to its end first
		c.waitErr = c.cmd.Wait()
		close(c.waited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.waited:
		default:
			_ = c.cmd.Process.Kill()
			<-c.waited
		}
	})
	return c
}

// read takes the child's output lines until it ends.
func (c *crashChild) read(sc *bufio.Scanner) {
	defer close(c.done)
	readyOnce := false
	for sc.Scan() {
		l := sc.Text()
		var err error
		switch {
		case l == c.spec.Ready:
			if !readyOnce {
				readyOnce = true
				close(c.ready)
			}
		case strings.HasPrefix(l, "ERROR"):
			err = errors.New(l)
		case c.spec.Line != nil:
			err = c.spec.Line(l)
		}
		c.mu.Lock()
		c.tail = append(c.tail, l)
		if len(c.tail) > 20 {
			c.tail = c.tail[1:]
		}
		if err != nil {
			c.errs = appendFirst(c.errs, fmt.Errorf("round %d: %w", c.spec.Round, err))
		}
		c.mu.Unlock()
	}
}

// output describes the child's last output lines and errors, once its
// output was read to its end.
func (c *crashChild) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return fmt.Sprintf("%s (round %d); its last lines:\n%s\nits errors: %v\nits stderr's end:\n%s",
		c.spec.Test, c.spec.Round, strings.Join(c.tail, "\n"), c.errs, c.stderr.String())
}

// await waits until ch is closed; the child ending first, or none of it
// within crashKitWait, fails the test.
func (c *crashChild) await(ch <-chan struct{}, what string) {
	c.t.Helper()
	select {
	case <-ch:
		return
	case <-c.waited:
		select {
		case <-ch: // its last lines
			return
		default:
		}
		c.t.Fatalf("the child ended (%v) before %s: %s", c.waitErr, what, c.output())
	case <-time.After(crashKitWait):
		_ = c.cmd.Process.Kill()
		<-c.waited
		c.t.Fatalf("the child never got %s: %s", what, c.output())
	}
}

// awaitReady waits for the child's Ready line.
func (c *crashChild) awaitReady() {
	c.t.Helper()
	c.await(c.ready, "ready")
}

// killAtRandom kills the child with SIGKILL after from plus up to spread
// (drawn from rng), and then as kill does.
func (c *crashChild) killAtRandom(rng *rand.Rand, from, spread time.Duration) {
	c.t.Helper()
	time.Sleep(from + time.Duration(rng.Int64N(int64(spread)))) // a random moment, not a bound
	c.kill()
}

// kill kills the child with SIGKILL, reaps it and reads its output to the
// end: an error of a line fails the test.
func (c *crashChild) kill() {
	c.t.Helper()
	err := c.cmd.Process.Kill() // SIGKILL where there are signals
	<-c.waited
	if errors.Is(err, os.ErrProcessDone) {
		c.t.Fatalf("the child ended (%v) before it was killed: %s", c.waitErr, c.output())
	}
	require.NoError(c.t, err, "kill the child")
	c.mu.Lock()
	errs := c.errs
	c.mu.Unlock()
	require.Empty(c.t, errs, "the output of %s", c.output())
}

// exit waits for the child to end on its own, which it must do cleanly
// and without an error in its output.
func (c *crashChild) exit() {
	c.t.Helper()
	select {
	case <-c.waited:
	case <-time.After(crashKitWait):
		_ = c.cmd.Process.Kill()
		<-c.waited
		c.t.Fatalf("the child did not end: %s", c.output())
	}
	require.NoError(c.t, c.waitErr, "the child must exit cleanly: %s", c.output())
	c.mu.Lock()
	errs := c.errs
	c.mu.Unlock()
	require.Empty(c.t, errs, "the output of %s", c.output())
}

// crashTail keeps the last max bytes written to it.
type crashTail struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (w *crashTail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > w.max {
		w.b = w.b[len(w.b)-w.max:]
	}
	return len(p), nil
}

func (w *crashTail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}
