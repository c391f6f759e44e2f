package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// halfFailing collects one gauge and one failure, as the engine's
// collector does when its group listing times out.
type halfFailing struct{ ok, failed *prometheus.Desc }

func (h halfFailing) Describe(ch chan<- *prometheus.Desc) { ch <- h.ok; ch <- h.failed }

func (h halfFailing) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(h.ok, prometheus.GaugeValue, 7)
	ch <- prometheus.NewInvalidMetric(h.failed, errors.New("listing groups: context deadline exceeded"))
}

// A collector that fails part of a scrape is logged, and the scrape still
// answers every metric that was collected, not HTTP 500 with none.
func TestServe_MetricsScrapeOutlivesAFailingCollector(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(halfFailing{
		ok:     prometheus.NewDesc("equeue_test_ok", "collected", nil, nil),
		failed: prometheus.NewDesc("equeue_test_lag", "failed", nil, nil),
	})
	var logs bytes.Buffer
	a := newApp(nil, io.Discard, io.Discard)
	a.log = slog.New(slog.NewTextHandler(&logs, nil))
	rec := httptest.NewRecorder()
	a.metricsHandler(reg).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), "equeue_test_ok 7")
	assert.Contains(t, logs.String(), "listing groups: context deadline exceeded", "the failure is logged")
}
