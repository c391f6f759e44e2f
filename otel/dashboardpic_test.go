package otel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
)

// dashboardPicPath is the README's picture of the dashboard: the panels of
// docs/grafana-dashboard.json laid out as Grafana would, drawn from samples
// of a Collector during a short load. EQUEUE_UPDATE_DOCS=1 makes
// TestDashboardPicture write it.
const dashboardPicPath = "../docs/dashboard.svg"

type picPanel struct {
	Type    string                   `json:"type"`
	Title   string                   `json:"title"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Field   struct {
		Defaults struct {
			Unit string `json:"unit"`
		} `json:"defaults"`
	} `json:"fieldConfig"`
	Targets []struct {
		Expr   string `json:"expr"`
		Legend string `json:"legendFormat"`
	} `json:"targets"`
}

func loadPanels(t *testing.T) []picPanel {
	t.Helper()
	raw, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d struct {
		Panels []picPanel `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &d))
	return d.Panels
}

// sample is one scrape of the collector.
type sample struct {
	at   time.Time
	fams map[string]*dto.MetricFamily
}

// TestDashboardPicture runs a small load (two groups, failures, retries,
// dead letters, a slow group building lag), scrapes the collector through
// it and draws every panel of the dashboard from the scrapes.
func TestDashboardPicture(t *testing.T) {
	if testing.Short() {
		t.Skip("a 2 s load")
	}
	ctx := ctxT(t)
	c := metrics.New()
	e := openEngine(t, &equeue.Options{Observer: c})
	c.Attach(e)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	require.NoError(t, e.CreateTopic(ctx, "orders", 4))
	require.NoError(t, e.CreateTopic(ctx, "payments", 2))
	work := func(fail float64, slow time.Duration) equeue.Handler {
		return func(_ context.Context, m *equeue.Message) error {
			time.Sleep(time.Duration(rand.Int64N(int64(slow)))) // simulated work
			switch r := rand.Float64(); {
			case r < fail/10:
				return equeue.DeadLetter(errors.New("bad order"))
			case r < fail && m.Attempt == 0:
				return errors.New("gateway timeout")
			}
			return nil
		}
	}
	for i, g := range []struct {
		name   string
		topics []string
		fail   float64
		slow   time.Duration
	}{{"billing", []string{"orders", "payments"}, 0.08, 2 * time.Millisecond}, {"shipping", []string{"orders"}, 0.02, 8 * time.Millisecond}} {
		var subs []equeue.Subscription
		for _, tp := range g.topics {
			subs = append(subs, equeue.Subscription{Topic: tp})
		}
		startConsumer(t, e, equeue.ConsumerOptions{Group: g.name, ID: fmt.Sprint("w", i), Subscriptions: subs, Concurrency: 4,
			RetryTopicDelays: []time.Duration{200 * time.Millisecond}, CommitInterval: 100 * time.Millisecond,
			Hooks: []equeue.Hooks{c.Hooks()}, Handler: work(g.fail, g.slow)})
	}
	p := newProducer(t, e, nil)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			batch := make([]*equeue.Message, 0, 16)
			for range 8 + n/20 { // a rising load
				batch = append(batch, &equeue.Message{Topic: "orders", Body: make([]byte, 200)})
			}
			_, _ = p.SendBatch(ctx, batch)
			_, _ = p.Send(ctx, &equeue.Message{Topic: "payments", Body: make([]byte, 120)})
		}
	})
	var samples []sample
	for range 26 {
		mfs, err := reg.Gather()
		require.NoError(t, err)
		s := sample{at: time.Now(), fams: map[string]*dto.MetricFamily{}}
		for _, mf := range mfs {
			s.fams[mf.GetName()] = mf
		}
		samples = append(samples, s)
		time.Sleep(100 * time.Millisecond) // the scrape interval
	}
	close(stop)
	wg.Wait()

	panels := loadPanels(t)
	svg := renderDashboard(panels, samples)
	checkSVG(t, svg)
	for _, p := range panels {
		assert.Contains(t, svg, ">"+xmlText(p.Title)+"<")
	}
	if os.Getenv("EQUEUE_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(dashboardPicPath, []byte(svg), 0o644))
	}
}

// TestDashboardPicture_DocIsCurrent: the picture in docs/ shows every panel
// of the dashboard as it is now.
func TestDashboardPicture_DocIsCurrent(t *testing.T) {
	raw, err := os.ReadFile(dashboardPicPath)
	require.NoError(t, err, "regenerate with EQUEUE_UPDATE_DOCS=1 go test -run TestDashboardPicture ./otel")
	checkSVG(t, string(raw))
	for _, p := range loadPanels(t) {
		assert.Contains(t, string(raw), ">"+xmlText(p.Title)+"<", "regenerate with EQUEUE_UPDATE_DOCS=1 go test -run TestDashboardPicture ./otel")
	}
}

// series is one line of a panel.
type series struct {
	name string
	at   []time.Time
	v    []float64
}

var (
	quantileRe = regexp.MustCompile(`histogram_quantile\(([0-9.]+)`)
	byRe       = regexp.MustCompile(`by \(([^)]*)\)`)
	legendRe   = regexp.MustCompile(`\{\{(\w+)\}\}`)
)

// evaluate computes a target's series from the samples. It understands
// the shapes of expression the dashboard uses, not PromQL: sums (grouped
// by the first "by" clause) of a gauge, of a counter's rate, of a
// difference of two gauges, a histogram's mean or quantile.
func evaluate(expr, legend string, samples []sample) []series {
	names := metricName.FindAllString(expr, -1)
	var by []string
	if m := byRe.FindStringSubmatch(expr); m != nil {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); l != "le" {
				by = append(by, l)
			}
		}
	}
	// Without an aggregation every series is its own line.
	keepAll := !strings.Contains(expr, "sum")
	key := func(m *dto.Metric) string {
		var parts []string
		if keepAll {
			for _, lp := range m.GetLabel() {
				parts = append(parts, lp.GetName()+"="+lp.GetValue())
			}
			return strings.Join(parts, ",")
		}
		for _, l := range by {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == l {
					parts = append(parts, l+"="+lp.GetValue())
				}
			}
		}
		return strings.Join(parts, ",")
	}
	// sum returns, per group, the summed value of a series name in s; for
	// a histogram's _bucket, per group and bound.
	sum := func(s sample, name string) map[string]float64 {
		out := map[string]float64{}
		fam := name
		part := ""
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(name, suf); ok && s.fams[b] != nil {
				fam, part = b, suf
			}
		}
		mf := s.fams[fam]
		if mf == nil {
			return out
		}
		for _, m := range mf.GetMetric() {
			k := key(m)
			switch {
			case part == "_sum":
				out[k] += m.GetHistogram().GetSampleSum()
			case part == "_count":
				out[k] += float64(m.GetHistogram().GetSampleCount())
			case part == "_bucket":
				for _, b := range m.GetHistogram().GetBucket() {
					out[k+"|"+strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)] += float64(b.GetCumulativeCount())
				}
				out[k+"|+Inf"] += float64(m.GetHistogram().GetSampleCount())
			case m.GetCounter() != nil:
				out[k] += m.GetCounter().GetValue()
			default:
				out[k] += m.GetGauge().GetValue()
			}
		}
		return out
	}
	lines := map[string]*series{}
	add := func(k string, at time.Time, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		l := lines[k]
		if l == nil {
			name := legendRe.ReplaceAllStringFunc(legend, func(s string) string {
				label := legendRe.FindStringSubmatch(s)[1]
				for _, kv := range strings.Split(k, ",") {
					if n, v, ok := strings.Cut(kv, "="); ok && n == label {
						return v
					}
				}
				return ""
			})
			l = &series{name: name}
			lines[k] = l
		}
		l.at = append(l.at, at)
		l.v = append(l.v, v)
	}
	rate := strings.Contains(expr, "rate(")
	q := quantileRe.FindStringSubmatch(expr)
	for i, s := range samples {
		switch {
		case q != nil:
			if i == 0 {
				continue
			}
			phi, _ := strconv.ParseFloat(q[1], 64)
			cur, prev := sum(s, names[0]), sum(samples[i-1], names[0])
			groups := map[string][][2]float64{} // group -> (bound, delta)
			for k, v := range cur {
				g, b, _ := strings.Cut(k, "|")
				bound := math.Inf(1)
				if b != "+Inf" {
					bound, _ = strconv.ParseFloat(b, 64)
				}
				groups[g] = append(groups[g], [2]float64{bound, v - prev[k]})
			}
			for g, bs := range groups {
				sort.Slice(bs, func(a, b int) bool { return bs[a][0] < bs[b][0] })
				total := bs[len(bs)-1][1]
				if total <= 0 {
					continue
				}
				rank, lower, below := phi*total, 0.0, 0.0
				for _, b := range bs {
					if b[1] >= rank {
						if math.IsInf(b[0], 1) {
							add(g, s.at, lower)
						} else {
							add(g, s.at, lower+(b[0]-lower)*(rank-below)/math.Max(b[1]-below, 1e-9))
						}
						break
					}
					lower, below = b[0], b[1]
				}
			}
		case len(names) == 2 && strings.HasSuffix(names[0], "_sum"):
			if i == 0 {
				continue
			}
			dt := s.at.Sub(samples[i-1].at).Seconds()
			num, den := sum(s, names[0]), sum(s, names[1])
			pnum, pden := sum(samples[i-1], names[0]), sum(samples[i-1], names[1])
			for k := range num {
				if d := (den[k] - pden[k]) / dt; d > 0 {
					add(k, s.at, (num[k]-pnum[k])/dt/d)
				}
			}
		case rate:
			if i == 0 {
				continue
			}
			dt := s.at.Sub(samples[i-1].at).Seconds()
			prev := sum(samples[i-1], names[0])
			for k, v := range sum(s, names[0]) {
				add(k, s.at, math.Max(v-prev[k], 0)/dt)
			}
		case len(names) == 2 && strings.Contains(expr, " - "):
			b := sum(s, names[1])
			for k, v := range sum(s, names[0]) {
				add(k, s.at, v-b[k])
			}
		default:
			for k, v := range sum(s, names[0]) {
				add(k, s.at, v)
			}
		}
	}
	out := make([]series, 0, len(lines))
	for _, l := range lines {
		out = append(out, *l)
	}
	slices.SortFunc(out, func(a, b series) int { return strings.Compare(a.name, b.name) })
	return out
}

// Dashboard layout: Grafana's 24-column grid.
const (
	dbCol  = 52
	dbRow  = 32
	dbPad  = 12
	dbHead = 52
)

var palette = []string{"#7eb26d", "#eab839", "#6ed0e0", "#ef843c", "#e24d42", "#1f78c1", "#ba43a9", "#705da0"}

func formatUnit(v float64, unit string) string {
	num := func(v float64) string {
		switch a := math.Abs(v); {
		case a >= 1e6:
			return strconv.FormatFloat(v/1e6, 'f', 1, 64) + "M"
		case a >= 1e3:
			return strconv.FormatFloat(v/1e3, 'f', 1, 64) + "K"
		case a >= 10 || a == 0:
			return strconv.FormatFloat(v, 'f', 0, 64)
		}
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	switch unit {
	case "s":
		if v < 1 {
			return strconv.FormatFloat(v*1000, 'f', 1, 64) + " ms"
		}
		return strconv.FormatFloat(v, 'f', 2, 64) + " s"
	case "bytes":
		return num(v) + "B"
	case "Bps":
		return num(v) + "B/s"
	case "msg/s":
		return num(v) + " msg/s"
	case "ops":
		return num(v) + "/s"
	}
	return num(v)
}

// renderDashboard draws the panels in Grafana's dark theme.
func renderDashboard(panels []picPanel, samples []sample) string {
	bottom := 0
	for _, p := range panels {
		bottom = max(bottom, p.GridPos.Y+p.GridPos.H)
	}
	width, height := 24*dbCol+2*dbPad, dbHead+bottom*dbRow+dbPad
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#111217"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="30" fill="#d8d9da" font-size="17">%s</text>`+"\n", dbPad, xmlText("equeue — docs/grafana-dashboard.json"))
	fmt.Fprintf(&b, `<text x="%d" y="30" fill="#8e8e8e" text-anchor="end">%s</text>`+"\n", width-dbPad, xmlText(fmt.Sprintf("drawn from %d scrapes of metrics.Collector by TestDashboardPicture (package otel)", len(samples))))
	for _, p := range panels {
		x := dbPad + p.GridPos.X*dbCol
		y := dbHead + p.GridPos.Y*dbRow
		w, h := p.GridPos.W*dbCol-6, p.GridPos.H*dbRow-6
		if p.Type == "row" {
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#d8d9da" font-size="13" font-weight="bold">%s</text>`+"\n", x, y+20, xmlText(p.Title))
			continue
		}
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="3" fill="#181b1f" stroke="#2c3235"/>`+"\n", x, y, w, h)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#d8d9da" font-size="12">%s</text>`+"\n", x+8, y+18, xmlText(p.Title))
		var all []series
		for _, tg := range p.Targets {
			all = append(all, evaluate(tg.Expr, tg.Legend, samples)...)
		}
		unit := p.Field.Defaults.Unit
		if p.Type == "stat" {
			v := 0.0
			for _, s := range all {
				if len(s.v) > 0 {
					v += s.v[len(s.v)-1]
				}
			}
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#73bf69" font-size="30" text-anchor="middle">%s</text>`+"\n", x+w/2, y+h/2+20, xmlText(formatUnit(v, unit)))
			continue
		}
		drawChart(&b, all, unit, samples, x+48, y+28, w-60, h-64)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func drawChart(b *strings.Builder, all []series, unit string, samples []sample, x, y, w, h int) {
	t0, t1 := samples[0].at, samples[len(samples)-1].at
	hi := 0.0
	for _, s := range all {
		for _, v := range s.v {
			hi = max(hi, v)
		}
	}
	if hi == 0 {
		hi = 1
	}
	hi *= 1.1
	for i := 0; i <= 3; i++ {
		gy := float64(y+h) - float64(i)*float64(h)/3
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#2c3235"/>`+"\n", x, gy, x+w, gy)
		fmt.Fprintf(b, `<text x="%d" y="%.1f" fill="#8e8e8e" font-size="9" text-anchor="end">%s</text>`+"\n", x-4, gy+3, xmlText(formatUnit(hi*float64(i)/3, unit)))
	}
	span := t1.Sub(t0).Seconds()
	for i, s := range all {
		color := palette[i%len(palette)]
		var pts []string
		for j, v := range s.v {
			px := float64(x) + s.at[j].Sub(t0).Seconds()/span*float64(w)
			py := float64(y+h) - v/hi*float64(h)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px, py))
		}
		if len(pts) > 1 {
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", strings.Join(pts, " "), color)
		}
		if i < 6 {
			lx := x + (i%3)*(w/3)
			ly := y + h + 20 + (i/3)*13
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="10" height="3" fill="%s"/><text x="%d" y="%d" fill="#ccccdc" font-size="10">%s</text>`+"\n", lx, ly-4, color, lx+14, ly, xmlText(s.name))
		}
	}
}
