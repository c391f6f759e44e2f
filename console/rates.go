package console

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// rates keeps the recent message rates in an in-process ring buffer, fed by
// the overview page: each render adds a sample when the last one is at least
// minGap old, so the charts move while someone watches and cost nothing
// otherwise. In counts messages appended to user topics (the sum of their
// max offsets); out counts offsets committed by groups.
type rates struct {
	mu     sync.Mutex
	last   snapshot
	prev   snapshot
	points [ringSize]ratePoint
	n      int // points held, up to ringSize
	head   int // next slot
}

const (
	ringSize = 90
	minGap   = time.Second
)

type snapshot struct {
	at     time.Time
	in     int64
	out    int64
	topics map[string]int64
}

type ratePoint struct {
	at      time.Time
	in, out float64
}

func newRates() *rates { return &rates{} }

// observe records a sample (when due) and returns the rates of the topics
// named between the last two samples.
func (r *rates) observe(s snapshot, names []string) map[string]float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.at.IsZero() || s.at.Sub(r.last.at) >= minGap {
		if !r.last.at.IsZero() {
			dt := s.at.Sub(r.last.at).Seconds()
			r.points[r.head] = ratePoint{at: s.at, in: perSec(s.in-r.last.in, dt), out: perSec(s.out-r.last.out, dt)}
			r.head = (r.head + 1) % ringSize
			r.n = min(r.n+1, ringSize)
		}
		r.prev, r.last = r.last, s
	}
	out := make(map[string]float64, len(names))
	if r.prev.at.IsZero() {
		return out
	}
	dt := r.last.at.Sub(r.prev.at).Seconds()
	for _, t := range names {
		v, ok := r.last.topics[t]
		if p, was := r.prev.topics[t]; ok && was {
			out[t] = perSec(v-p, dt)
		}
	}
	return out
}

// perSec is a non-negative rate: counters drop when topics are deleted or
// offsets reset, which is not traffic.
func perSec(d int64, dt float64) float64 {
	if d <= 0 || dt <= 0 {
		return 0
	}
	return float64(d) / dt
}

// chart is a small line chart of the ring, ready for an SVG.
type chart struct {
	Width, Height int
	In, Out       string // polyline points
	InNow, OutNow float64
	Max           float64
	Span          string
	Samples       int
}

func (r *rates) chart() chart {
	r.mu.Lock()
	pts := make([]ratePoint, 0, r.n)
	for i := 0; i < r.n; i++ {
		pts = append(pts, r.points[(r.head-r.n+i+ringSize)%ringSize])
	}
	r.mu.Unlock()
	c := chart{Width: 360, Height: 80, Samples: len(pts)}
	if len(pts) == 0 {
		return c
	}
	for _, p := range pts {
		c.Max = max(c.Max, p.in, p.out)
	}
	c.InNow, c.OutNow = pts[len(pts)-1].in, pts[len(pts)-1].out
	c.Span = pts[len(pts)-1].at.Sub(pts[0].at).Round(time.Second).String()
	top := c.Max * 1.25 // headroom, so a steady rate is not drawn on the frame
	if top == 0 {
		top = 1
	}
	line := func(v func(ratePoint) float64) string {
		var b strings.Builder
		for i, p := range pts {
			x := float64(c.Width)
			if len(pts) > 1 {
				x = float64(i) * float64(c.Width) / float64(len(pts)-1)
			}
			y := float64(c.Height-4) - v(p)/top*float64(c.Height-8)
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		return strings.TrimSpace(b.String())
	}
	c.In = line(func(p ratePoint) float64 { return p.in })
	c.Out = line(func(p ratePoint) float64 { return p.out })
	return c
}
