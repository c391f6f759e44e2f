package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/equeue-go/equeue/internal/testport"
	"go.uber.org/goleak"
)

// bin is the equeue binary built once for the package's tests.
var bin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "equeue-cli-test-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "equeue")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		// Run the binary under the race detector too, since the tests
		// exercise the command's own concurrency through it.
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the equeue binary:", err)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			return 1
		}
	}
	return code
}

// result is the outcome of one run of the binary.
type result struct {
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", r.code, r.stdout, r.stderr)
}

// cleanEnv is the test process's environment without EQUEUE_* variables,
// so a developer's settings cannot change what the tests run against. A
// race-enabled binary would sleep a second at every exit; it need not, and
// it exits 66 on a race, which fails the test.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "EQUEUE_") && !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	return append(env, "GORACE=atexit_sleep_ms=0 exitcode=66")
}

// cliIn runs the binary with args and stdin and waits for it (at most a
// minute).
func cliIn(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	return r
}

func cli(t *testing.T, args ...string) result {
	t.Helper()
	return cliIn(t, "", args...)
}

// ok runs the binary and fails the test unless it exits 0.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := cli(t, args...)
	if r.code != 0 {
		t.Fatalf("equeue %s: %v", strings.Join(args, " "), r)
	}
	return r.stdout
}

// fails runs the binary and fails the test unless it exits with code and
// says want on stderr.
func fails(t *testing.T, code int, want string, args ...string) {
	t.Helper()
	r := cli(t, args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		t.Fatalf("equeue %s: want exit %d and %q on stderr, got %v", strings.Join(args, " "), code, want, r)
	}
}

// jsonLines decodes one JSON object per line.
func jsonLines[T any](t *testing.T, s string) []T {
	t.Helper()
	var out []T
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if line == "" {
			continue
		}
		var v T
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("decode %q: %v", line, err)
		}
		out = append(out, v)
	}
	return out
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("decode %q: %v", s, err)
	}
	return v
}

// freePort returns a loopback address nobody listens on right now, and
// none it returned before in this run, below the ephemeral port range
// (testport): a test asks for several before its processes listen on
// them, and restarts a process on the same address.
func freePort(t *testing.T) string {
	t.Helper()
	return testport.Addr(t)
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// eventually retries cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
