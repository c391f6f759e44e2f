package main

import (
	"context"
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
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	"google.golang.org/grpc"
)

// holdingMetrics is a fake OTLP/gRPC metrics collector whose exports are
// never answered: each waits until its call ends.
type holdingMetrics struct {
	collmetrics.UnimplementedMetricsServiceServer
	// exporting gets a value when an export arrives.
	exporting chan struct{}
}

func (h holdingMetrics) Export(ctx context.Context, _ *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	select {
	case h.exporting <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// startHoldingCollector starts a holdingMetrics collector, stopped when
// the test ends, and returns it and its address.
func startHoldingCollector(t *testing.T) (holdingMetrics, string) {
	t.Helper()
	h := holdingMetrics{exporting: make(chan struct{}, 1)}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := grpc.NewServer()
	collmetrics.RegisterMetricsServiceServer(s, h)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return h, lis.Addr().String()
}

// TestServe_SecondSignalCutsTheAddonRelease: when serve fails after its
// add-ons were configured (here: the directory holds no engine), it
// releases what they started, the OTLP exporters, whose last export may
// wait up to serve's grace period for a collector that does not answer. A
// second signal (SIGINT or SIGTERM) cuts that wait, as it cuts the wait
// for calls in progress: the release ends cancelled, not at its deadline. Before, the
// release waited out its grace period whatever the signals.
func TestServe_SecondSignalCutsTheAddonRelease(t *testing.T) {
	t.Parallel()
	coll, caddr := startHoldingCollector(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not an engine"), 0o600))
	srv := startServe(t, "--dir", dir, "--listen", freePort(t), "--otlp-endpoint", "http://"+caddr)
	select {
	case <-coll.exporting:
	case <-srv.done:
		t.Fatalf("serve exited before its last export; its log:\n%s", srv.stderr)
	case <-time.After(time.Minute):
		t.Fatalf("no export reached the collector; serve's log:\n%s", srv.stderr)
	}
	// Two different signals: two of the same, sent at once, may reach the
	// process as one (this path logs nothing at the first to wait for).
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, srv.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-srv.done:
	case <-time.After(time.Minute):
		t.Fatalf("serve did not exit; its log:\n%s", srv.stderr)
	}
	var ee *exec.ExitError
	require.ErrorAs(t, srv.err, &ee, srv.stderr.String())
	assert.Equal(t, 1, ee.ExitCode(), srv.stderr.String())
	log := srv.stderr.String()
	assert.Contains(t, log, "is not an equeue engine directory")
	assert.Contains(t, log, "add-on shutdown")
	assert.Contains(t, log, "context canceled", "the release was cut")
	assert.False(t, strings.Contains(log, "deadline exceeded"), "the release waited out its grace period:\n%s", log)
}
