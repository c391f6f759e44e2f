package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collmetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// collector is a fake OTLP/gRPC collector that keeps what it receives.
type collector struct {
	colltrace.UnimplementedTraceServiceServer
	collmetrics.UnimplementedMetricsServiceServer

	mu      sync.Mutex
	spans   []*tracepb.Span
	service []string
	metrics map[string]bool
	// metricExports counts the metrics export requests received.
	metricExports int
}

func (c *collector) Export(_ context.Context, req *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				c.service = append(c.service, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			c.spans = append(c.spans, ss.GetSpans()...)
		}
	}
	return &colltrace.ExportTraceServiceResponse{}, nil
}

// metricsService adapts collector to the metrics service, whose Export
// method has another signature.
type metricsService struct {
	collmetrics.UnimplementedMetricsServiceServer
	c *collector
}

func (m metricsService) Export(_ context.Context, req *collmetrics.ExportMetricsServiceRequest) (*collmetrics.ExportMetricsServiceResponse, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	m.c.metricExports++
	for _, rm := range req.GetResourceMetrics() {
		for _, kv := range rm.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				m.c.service = append(m.c.service, kv.GetValue().GetStringValue())
			}
		}
		for _, sm := range rm.GetScopeMetrics() {
			for _, mt := range sm.GetMetrics() {
				m.c.metrics[mt.GetName()] = true
			}
		}
	}
	return &collmetrics.ExportMetricsServiceResponse{}, nil
}

func startCollector(t *testing.T) (*collector, string) {
	t.Helper()
	c := &collector{metrics: map[string]bool{}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(s, c)
	collmetrics.RegisterMetricsServiceServer(s, metricsService{c: c})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return c, lis.Addr().String()
}

// TestServe_OTLPAndPprof serves with --otlp-endpoint and --pprof: profiles
// are served, the engine's metrics reach the collector, and so does the
// broker's span of a delayed message becoming visible, in the trace whose
// context the producer put in the message's properties.
func TestServe_OTLPAndPprof(t *testing.T) {
	t.Parallel()
	coll, caddr := startCollector(t)
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "later")
	addr, paddr, maddr := freePort(t), freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--otlp-endpoint", "http://"+caddr,
		"--otlp-metrics-interval", "100ms", "--pprof", paddr, "--metrics", maddr)
	eventually(t, 20*time.Second, "serve's /debug/pprof/", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + paddr + "/debug/pprof/cmdline")
		return err == nil && code == http.StatusOK
	})
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ok(t, "--server", addr, "produce", "later", "x", "--delay", "100ms",
		"--property", "traceparent=00-"+traceID+"-"+parentID+"-01")
	eventually(t, 20*time.Second, "exported metrics", func() bool {
		coll.mu.Lock()
		defer coll.mu.Unlock()
		return coll.metrics["equeue.appended.messages"] && coll.metrics["equeue.store.bytes"]
	})
	// Prometheus metrics are still served beside the export.
	if code, body, err := httpGet("http://" + maddr + "/metrics"); err != nil || code != http.StatusOK ||
		!strings.Contains(body, "equeue_appended_messages_total{") {
		t.Fatalf("/metrics beside OTLP: %d %v", code, err)
	}
	// The delayed message is moved within a second; stopping flushes its span.
	eventually(t, 20*time.Second, "the delayed message", func() bool {
		return decode[topicJSON](t, ok(t, "--server", addr, "topic", "describe", "later", "--json")).Messages == 1
	})
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d; its log:\n%s", code, srv.stderr)
	}
	coll.mu.Lock()
	defer coll.mu.Unlock()
	var found bool
	for _, s := range coll.spans {
		if s.GetName() == "deliver later" {
			found = true
			if got := hexID(s.GetTraceId()); got != traceID {
				t.Errorf("span in trace %s, want %s", got, traceID)
			}
			if got := hexID(s.GetParentSpanId()); got != parentID {
				t.Errorf("span's parent %s, want %s", got, parentID)
			}
		}
	}
	if !found {
		t.Fatalf("no \"deliver later\" span among %d exported; serve's log:\n%s", len(coll.spans), srv.stderr)
	}
	if len(coll.service) == 0 || coll.service[0] != "equeue" {
		t.Errorf("service.name %v, want equeue", coll.service)
	}
}

func hexID(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&15])
	}
	return string(out)
}

// TestServe_OTLPFromEnvironment: the standard OTEL_* variables alone switch
// export on and name the service.
func TestServe_OTLPFromEnvironment(t *testing.T) {
	coll, caddr := startCollector(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+caddr)
	t.Setenv("OTEL_METRIC_EXPORT_INTERVAL", "100")
	t.Setenv("OTEL_SERVICE_NAME", "broker-1")
	dir := t.TempDir()
	srv := startServe(t, "--dir", dir, "--listen", freePort(t))
	eventually(t, 20*time.Second, "exported metrics", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		coll.mu.Lock()
		defer coll.mu.Unlock()
		return coll.metrics["equeue.store.bytes"]
	})
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d; its log:\n%s", code, srv.stderr)
	}
	coll.mu.Lock()
	if len(coll.service) == 0 || coll.service[0] != "broker-1" {
		t.Errorf("service.name %v, want broker-1 from OTEL_SERVICE_NAME", coll.service)
	}
	coll.mu.Unlock()
	if !strings.Contains(srv.stderr.String(), "exporting spans and metrics over OTLP") {
		t.Errorf("serve's log does not say it exports:\n%s", srv.stderr)
	}
}

// A serve that fails after its OTLP exporters started, whatever step
// failed (the directory, a cluster option the node refuses, the node),
// shuts the exporters down before it returns: the meter provider's last
// export reaches the collector, and no goroutine of the exporters is left
// behind. Not parallel: the goroutines of this process are counted.
func TestServe_FailedStartShutsDownTheExporters(t *testing.T) {
	notEngine := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notEngine, "notes.txt"), []byte("mine\n"), 0o600))
	aFile := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(aFile, nil, 0o600))
	cluster := func(args ...string) []string {
		return append([]string{"--cluster-id", "n1", "--cluster-raft", freePort(t)}, args...)
	}
	for _, c := range []struct {
		name string
		code int
		args []string
	}{
		{"directory of something else", exitFailure, []string{"--dir", notEngine}},
		// The node's own check refuses these, after serve took its ports
		// and built the exporters, before anything touches the disk.
		{"cluster option refused", exitUsage, cluster("--cluster-log-store", "ssd")},
		{"cluster peers refused", exitUsage, cluster("--cluster-bootstrap", "--cluster-peers", "n2=127.0.0.1:7752")},
		{"cluster node not opened", exitFailure, cluster("--dir", aFile)},
	} {
		t.Run(c.name, func(t *testing.T) {
			coll, caddr := startCollector(t)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			args := []string{"serve", "--log-level", "error", "--listen", freePort(t),
				"--otlp-endpoint", "http://" + caddr, "--otlp-metrics-interval", "1h"}
			if !slices.Contains(c.args, "--dir") {
				args = append(args, "--dir", filepath.Join(t.TempDir(), "data"))
			}
			r := runBounded(t, nil, append(args, c.args...)...)
			require.Equal(t, c.code, r.code, "%v", r)
			coll.mu.Lock()
			defer coll.mu.Unlock()
			assert.Positive(t, coll.metricExports, "the meter provider's last export on shutdown")
		})
	}
}

// errAddonStart is the failure of failingAddon's start.
var errAddonStart = errors.New("add-on refused to start")

// failingAddon is an add-on whose start fails. No add-on of the command
// line fails there any more (their flags are checked before serve takes a
// port), but start may still fail.
type failingAddon struct{}

func (failingAddon) addFlags(*pflag.FlagSet)         {}
func (failingAddon) enabled() bool                   { return true }
func (failingAddon) ports() []servePort              { return nil }
func (failingAddon) configure(*equeue.Options) error { return nil }
func (failingAddon) attachEngine(*equeue.Engine)     {}
func (failingAddon) start(context.Context, serveEnv) (func(context.Context) error, error) {
	return nil, errAddonStart
}

// An add-on whose start fails after the engine or the node and the gRPC
// server exist: serve returns its error, shuts down the exporters of the
// add-ons not started yet, and stops the gRPC server's workers. Not
// parallel: the goroutines of this process are counted.
func TestServe_FailedAddonStartShutsDownTheExporters(t *testing.T) {
	for _, c := range []struct {
		name    string
		cluster clusterFlags
	}{
		{"engine", clusterFlags{}},
		{"cluster node", clusterFlags{id: "n1", raft: freePort(t), bootstrap: true}},
	} {
		t.Run(c.name, func(t *testing.T) {
			coll, caddr := startCollector(t)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			a := newApp(nil, io.Discard, io.Discard)
			a.dir = filepath.Join(t.TempDir(), "data")
			otel := &otelAddon{endpoint: "http://" + caddr, interval: time.Hour}
			err := a.serve(context.Background(), serveConfig{
				listen: freePort(t), sync: equeue.SyncAlways, cluster: &c.cluster,
				addons: []serveAddon{failingAddon{}, otel},
				server: &remote.ServerOptions{GracefulStopTimeout: shutdownGrace},
			})
			require.ErrorIs(t, err, errAddonStart)
			coll.mu.Lock()
			defer coll.mu.Unlock()
			assert.Positive(t, coll.metricExports, "the meter provider's last export on shutdown")
		})
	}
}
