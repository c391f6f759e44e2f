package remote_test

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"testing"
	"time"
)

// benchProfileEnv names a directory: when set, the benchmark broker writes
// a CPU profile of the busy produce phase there (broker-produce.cpu), for
// `go tool pprof`.
const benchProfileEnv = "EQUEUE_BENCH_PROFILE"

// profileOnSignal makes the broker child start a CPU profile on SIGUSR2
// and stop it on the next one. Nothing happens when dir is empty.
func profileOnSignal(dir string) {
	if dir == "" {
		return
	}
	usr2 := make(chan os.Signal, 1)
	signal.Notify(usr2, sigProfile)
	go func() {
		var f *os.File
		for range usr2 {
			if f != nil {
				pprof.StopCPUProfile()
				_ = f.Close()
				f = nil
				continue
			}
			var err error
			if f, err = os.Create(filepath.Join(dir, "broker-produce.cpu")); err != nil {
				fmt.Fprintln(os.Stderr, err)
				continue
			}
			if err := pprof.StartCPUProfile(f); err != nil {
				_ = f.Close()
				f = nil
			}
		}
	}()
}

// brokerProfile toggles the broker child's CPU profile when the benchmark
// runs with benchProfileEnv set.
func brokerProfile(b *testing.B, br *mpChild) {
	b.Helper()
	if os.Getenv(benchProfileEnv) == "" {
		return
	}
	if err := br.cmd.Process.Signal(sigProfile); err != nil {
		b.Log(err)
	}
	time.Sleep(100 * time.Millisecond) // let the child act on it before the phase starts
}
