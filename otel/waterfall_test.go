package otel_test

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/otel"
)

// waterfallPath is the README's picture of a trace. EQUEUE_UPDATE_DOCS=1
// makes TestWaterfall write it from its run.
const waterfallPath = "../docs/trace-waterfall.svg"

// waterfallSpans are the spans the scenario's trace must show.
var waterfallSpans = []string{
	"POST /orders", "send orders", "deliver orders", "process orders", "retry billing",
	"deliver %RETRY%billing", "charge card",
}

// TestWaterfall runs one order through a delayed send, a failed attempt
// and its retry, and renders the recorded trace as an SVG waterfall: every
// span is in it, parent before child.
func TestWaterfall(t *testing.T) {
	ctx := ctxT(t)
	tp, rec := recorder(t)
	tr := otel.NewTracer(&otel.TracerOptions{TracerProvider: tp})
	e := openEngine(t, &equeue.Options{Observer: tr.Observer()})
	require.NoError(t, e.CreateTopic(ctx, "orders", 2))
	app := tp.Tracer("shop")
	startConsumer(t, e, equeue.ConsumerOptions{Group: "billing", ID: "worker-1", Subscriptions: []equeue.Subscription{{Topic: "orders"}},
		RetryTopicDelays: []time.Duration{60 * time.Millisecond}, Hooks: []equeue.Hooks{tr.Hooks()},
		Handler: func(ctx context.Context, m *equeue.Message) error {
			_, span := app.Start(ctx, "charge card")
			defer span.End()
			time.Sleep(12 * time.Millisecond) // simulated work, so the picture shows the handler's bar
			if m.Attempt == 0 {
				err := errors.New("payment gateway timeout")
				span.SetStatus(codes.Error, err.Error())
				return err
			}
			return nil
		}})
	p := newProducer(t, e, tr)
	rctx, req := app.Start(ctx, "POST /orders", trace.WithSpanKind(trace.SpanKindServer))
	_, err := p.Send(rctx, &equeue.Message{Topic: "orders", Keys: []string{"order-42"}, Body: []byte(`{"order":42}`), Delay: 80 * time.Millisecond})
	require.NoError(t, err)
	req.End()
	eventually(t, 20*time.Second, func() bool { return len(spansNamed(rec, "process orders")) == 2 }, "both attempts")

	spans := traceOf(rec.Ended(), req.SpanContext().TraceID())
	var buf bytes.Buffer
	require.NoError(t, renderWaterfall(&buf, spans))
	svg := buf.String()
	checkSVG(t, svg)
	pos := map[string]int{}
	for _, name := range waterfallSpans {
		i := strings.Index(svg, ">"+xmlText(name)+"<")
		require.GreaterOrEqual(t, i, 0, "the waterfall shows %q", name)
		pos[name] = i
	}
	assert.Less(t, pos["POST /orders"], pos["send orders"], "parent first")
	assert.Less(t, pos["send orders"], pos["process orders"])
	if os.Getenv("EQUEUE_UPDATE_DOCS") == "1" {
		require.NoError(t, os.WriteFile(waterfallPath, buf.Bytes(), 0o644))
	}
}

// TestWaterfall_DocIsCurrent: the picture in docs/ is a rendering of the
// spans this package makes today.
func TestWaterfall_DocIsCurrent(t *testing.T) {
	raw, err := os.ReadFile(waterfallPath)
	require.NoError(t, err, "regenerate with EQUEUE_UPDATE_DOCS=1 go test -run TestWaterfall ./otel")
	checkSVG(t, string(raw))
	for _, name := range waterfallSpans {
		assert.Contains(t, string(raw), ">"+xmlText(name)+"<", "regenerate with EQUEUE_UPDATE_DOCS=1 go test -run TestWaterfall ./otel")
	}
}

func checkSVG(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG is well-formed XML")
	}
}

func traceOf(all []sdktrace.ReadOnlySpan, id trace.TraceID) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range all {
		if s.SpanContext().TraceID() == id {
			out = append(out, s)
		}
	}
	return out
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// Layout of the waterfall, in pixels.
const (
	wfLabel  = 300 // label column
	wfChart  = 640 // time axis
	wfRow    = 26
	wfTop    = 76
	wfIndent = 14
	wfPad    = 16
)

type wfRowData struct {
	s     sdktrace.ReadOnlySpan
	depth int
}

// renderWaterfall draws spans as a waterfall: one row per span, children
// below their parent by start time, bars on a shared time axis, events as
// ticks, errors in red.
func renderWaterfall(w io.Writer, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return errors.New("no spans")
	}
	byID := map[trace.SpanID]bool{}
	children := map[trace.SpanID][]sdktrace.ReadOnlySpan{}
	var roots []sdktrace.ReadOnlySpan
	start, end := spans[0].StartTime(), spans[0].EndTime()
	for _, s := range spans {
		byID[s.SpanContext().SpanID()] = true
		if s.StartTime().Before(start) {
			start = s.StartTime()
		}
		if s.EndTime().After(end) {
			end = s.EndTime()
		}
	}
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() && byID[p.SpanID()] {
			children[p.SpanID()] = append(children[p.SpanID()], s)
		} else {
			roots = append(roots, s)
		}
	}
	byStart := func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) }
	var rows []wfRowData
	var walk func(s sdktrace.ReadOnlySpan, depth int)
	walk = func(s sdktrace.ReadOnlySpan, depth int) {
		rows = append(rows, wfRowData{s, depth})
		kids := children[s.SpanContext().SpanID()]
		slices.SortFunc(kids, byStart)
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	slices.SortFunc(roots, byStart)
	for _, r := range roots {
		walk(r, 0)
	}

	total := end.Sub(start)
	if total <= 0 {
		total = time.Millisecond
	}
	x := func(t time.Time) float64 { return wfLabel + float64(t.Sub(start))/float64(total)*wfChart }
	width := wfLabel + wfChart + wfPad*2 + 60
	height := wfTop + len(rows)*wfRow + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15" font-weight="bold">%s</text>`+"\n", wfPad, xmlText("Trace "+rows[0].s.SpanContext().TraceID().String()))
	fmt.Fprintf(&b, `<text x="%d" y="40" fill="#555">%s</text>`+"\n", wfPad, xmlText(fmt.Sprintf("%d spans, %v - recorded by TestWaterfall (package otel)", len(rows), total.Round(time.Millisecond))))
	// Time axis: five ticks.
	for i := 0; i <= 4; i++ {
		tx := wfLabel + float64(i)*wfChart/4
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#e3e3e3"/>`+"\n", tx, wfTop-6, tx, wfTop+len(rows)*wfRow)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#777" font-size="10" text-anchor="middle">%s</text>`+"\n", tx, wfTop-12,
			xmlText((total * time.Duration(i) / 4).Round(time.Millisecond).String()))
	}
	for i, r := range rows {
		y := wfTop + i*wfRow
		if i%2 == 1 {
			fmt.Fprintf(&b, `<rect x="0" y="%d" width="%d" height="%d" fill="#f7f7f9"/>`+"\n", y, width, wfRow)
		}
		fill := map[trace.SpanKind]string{
			trace.SpanKindProducer: "#4e79a7", trace.SpanKindConsumer: "#59a14f",
			trace.SpanKindInternal: "#f28e2b", trace.SpanKindServer: "#9c755f",
		}[r.s.SpanKind()]
		if fill == "" {
			fill = "#9c755f"
		}
		if r.s.InstrumentationScope().Name != otel.ScopeName {
			fill = "#bab0ac" // the application's own spans
		}
		stroke := "none"
		if r.s.Status().Code == codes.Error {
			stroke = "#d62728"
		}
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", wfPad+r.depth*wfIndent, y+17, xmlText(r.s.Name()))
		x0, x1 := x(r.s.StartTime()), x(r.s.EndTime())
		w := max(x1-x0, 2)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" rx="2" fill="%s" stroke="%s" stroke-width="2"><title>%s</title></rect>`+"\n",
			x0, y+6, w, wfRow-12, fill, stroke, xmlText(spanTitle(r.s)))
		if x0 > wfLabel+wfChart*0.6 { // the note goes left of a bar near the end
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#444" font-size="10" text-anchor="end">%s</text>`+"\n", x0-6, y+17,
				xmlText(spanNote(r.s)))
		} else {
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" fill="#444" font-size="10">%s</text>`+"\n", x0+w+4, y+17,
				xmlText(spanNote(r.s)))
		}
		for _, ev := range r.s.Events() {
			ex := x(ev.Time)
			fmt.Fprintf(&b, `<path d="M %.1f %d l 4 5 l -4 5 l -4 -5 z" fill="#222"><title>%s</title></path>`+"\n", ex, y+3, xmlText(ev.Name))
		}
	}
	ly := wfTop + len(rows)*wfRow + 24
	lx := wfPad
	for _, l := range []struct{ color, text string }{
		{"#9c755f", "request"}, {"#4e79a7", "producer (send)"}, {"#59a14f", "consumer (process)"},
		{"#f28e2b", "broker (retry, deliver)"}, {"#bab0ac", "handler's own"}, {"#222", "event"},
	} {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/><text x="%d" y="%d" font-size="11">%s</text>`+"\n", lx, ly-10, l.color, lx+16, ly, xmlText(l.text))
		lx += 24 + 7*len(l.text)
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="12" fill="none" stroke="#d62728" stroke-width="2"/><text x="%d" y="%d" font-size="11">error</text>`+"\n", lx, ly-10, lx+16, ly)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// spanNote is the text beside a bar: duration, attempt, outcome.
func spanNote(s sdktrace.ReadOnlySpan) string {
	parts := []string{s.EndTime().Sub(s.StartTime()).Round(10 * time.Microsecond).String()}
	for _, kv := range s.Attributes() {
		switch kv.Key {
		case otel.AttrAttempt:
			if s.SpanKind() == trace.SpanKindConsumer {
				parts = append(parts, "attempt "+kv.Value.String())
			}
		case otel.AttrOutcome:
			parts = append(parts, kv.Value.String())
		}
	}
	for _, ev := range s.Events() {
		if ev.Name != "exception" {
			parts = append(parts, ev.Name)
		}
	}
	return strings.Join(parts, " · ")
}

// spanTitle is the hover text of a bar: its attributes.
func spanTitle(s sdktrace.ReadOnlySpan) string {
	lines := []string{s.Name()}
	for _, kv := range s.Attributes() {
		lines = append(lines, string(kv.Key)+"="+kv.Value.String())
	}
	return strings.Join(lines, "\n")
}
