package otel_test

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/equeue-go/equeue/metrics"
	"github.com/equeue-go/equeue/otel"
)

const dashboardPath = "../docs/grafana-dashboard.json"

// gatherer registers c on a fresh pedantic registry.
func gatherer(c prometheus.Collector) prometheus.Gatherer {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	return reg
}

type dashboard struct {
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// dashboardQueries returns every PromQL expression of the dashboard.
func dashboardQueries(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.UID)
	var exprs []string
	ids := map[int]bool{}
	for _, p := range d.Panels {
		assert.False(t, ids[p.ID], "panel id %d is unique", p.ID)
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		assert.NotEmpty(t, p.Targets, "panel %q queries something", p.Title)
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

var (
	metricName = regexp.MustCompile(`\bequeue_[a-z_]+`)
	// selector finds name{label=~"..."} matchers and "by (a, b)" groupings.
	matcher  = regexp.MustCompile(`(equeue_[a-z_]+)\{([^}]*)\}`)
	labelEq  = regexp.MustCompile(`([a-z_]+)\s*[=!~]+`)
	grouping = regexp.MustCompile(`by \(([^)]*)\)`)
)

// families gathers g into name -> family.
func families(t *testing.T, g prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := g.Gather()
	require.NoError(t, err)
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// family resolves a queried series name: a histogram's _bucket, _sum and
// _count series belong to its family.
func family(fams map[string]*dto.MetricFamily, name string) *dto.MetricFamily {
	if mf, ok := fams[name]; ok {
		return mf
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if mf, ok := fams[base]; ok && mf.GetType() == dto.MetricType_HISTOGRAM {
				return mf
			}
		}
	}
	return nil
}

func labelsOf(mf *dto.MetricFamily) []string {
	var out []string
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if !slices.Contains(out, lp.GetName()) {
				out = append(out, lp.GetName())
			}
		}
	}
	if mf.GetType() == dto.MetricType_HISTOGRAM {
		out = append(out, "le")
	}
	return out
}

// checkDashboard asserts that every metric the dashboard queries is in fams,
// with every label it selects on.
func checkDashboard(t *testing.T, fams map[string]*dto.MetricFamily, source string) {
	t.Helper()
	exprs := dashboardQueries(t)
	require.NotEmpty(t, exprs)
	used := map[string]bool{}
	for _, e := range exprs {
		for _, n := range metricName.FindAllString(e, -1) {
			used[n] = true
		}
	}
	names := make([]string, 0, len(used))
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		assert.NotNil(t, family(fams, n), "%s: the dashboard queries %s", source, n)
	}
	for _, e := range exprs {
		for _, m := range matcher.FindAllStringSubmatch(e, -1) {
			mf := family(fams, m[1])
			if mf == nil {
				continue
			}
			for _, l := range labelEq.FindAllStringSubmatch(m[2], -1) {
				assert.Contains(t, labelsOf(mf), l[1], "%s: %s has label %s", source, m[1], l[1])
			}
		}
		// Labels grouped on must exist on every metric of the expression.
		for _, g := range grouping.FindAllStringSubmatch(e, -1) {
			for _, l := range strings.Split(g[1], ",") {
				l = strings.TrimSpace(l)
				for _, n := range metricName.FindAllString(e, -1) {
					if mf := family(fams, n); mf != nil {
						assert.Contains(t, labelsOf(mf), l, "%s: %q groups by %s", source, e, l)
					}
				}
			}
		}
	}
	assert.GreaterOrEqual(t, len(names), 12, "the dashboard covers rates, lag, latency, retries, dead letters and store size")
}

// TestDashboard_MetricsExist checks the Grafana dashboard against the
// Prometheus collector of a busy engine: every metric it queries exists,
// with the labels it uses.
func TestDashboard_MetricsExist(t *testing.T) {
	c := metrics.New()
	e := busyEngine(t, c, c.Hooks())
	c.Attach(e)
	checkDashboard(t, families(t, gatherer(c)), "metrics.Collector")
}

// TestDashboard_OTelMetricsExist: the same dashboard works on the
// OpenTelemetry metrics exported through an OpenTelemetry Prometheus
// exporter.
func TestDashboard_OTelMetricsExist(t *testing.T) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo(), otelprom.WithoutTargetInfo())
	require.NoError(t, err)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := otel.NewMetrics(&otel.MetricsOptions{MeterProvider: mp})
	require.NoError(t, err)
	t.Cleanup(func() { _ = m.Close() })
	e := busyEngine(t, m, m.Hooks())
	m.Attach(e)
	checkDashboard(t, families(t, reg), "otel.Metrics")
}
