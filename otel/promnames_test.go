package otel_test

import (
	"context"
	"sort"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/equeue-go/equeue/metrics"
	"github.com/equeue-go/equeue/otel"
)

// TestMetrics_PrometheusNamesAreTheCollectorNames: exported through an
// OpenTelemetry Prometheus exporter, Metrics gives every series family
// package metrics' Collector gives for the same engine, under the same
// name and of the same type, as the package documentation promises.
func TestMetrics_PrometheusNamesAreTheCollectorNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otel.NewMetrics(&otel.MetricsOptions{MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	c := metrics.New()

	e := busyEngine(t, otel.Observers(c, m), c.Hooks(), m.Hooks())
	c.Attach(e)
	m.Attach(e)

	types := func(g prometheus.Gatherer) map[string]string {
		out := map[string]string{}
		for name, mf := range families(t, g) {
			out[name] = mf.GetType().String()
		}
		return out
	}
	prom, viaOTel := types(gatherer(c)), types(reg)
	names := make([]string, 0, len(prom))
	for n := range prom {
		names = append(names, n)
	}
	sort.Strings(names)
	require.NotEmpty(t, names)
	for _, n := range names {
		require.Equal(t, prom[n], viaOTel[n], "%s through the OpenTelemetry exporter (it has %v)", n, viaOTel)
	}
	require.Len(t, viaOTel, len(prom), "the same families: %v against %v", viaOTel, prom)
}
