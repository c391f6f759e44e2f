package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// BenchmarkOverview renders the overview of an engine with 1,000 topics and
// 1,000 groups (one member each, two queues per topic) and reports the
// milliseconds per render.
func BenchmarkOverview(b *testing.B) {
	ctx := ctxT(b)
	e := openEngine(b)
	const n = 1000
	for i := range n {
		require.NoError(b, e.CreateTopic(ctx, fmt.Sprintf("topic-%04d", i), 2))
	}
	for i := range n {
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: fmt.Sprintf("group-%04d", i), Member: "m", Subscriptions: []equeue.Subscription{{Topic: fmt.Sprintf("topic-%04d", i)}}})
		require.NoError(b, err)
	}
	groups, err := e.Groups(ctx)
	require.NoError(b, err)
	require.Len(b, groups, n)
	h := console.New(e, console.Options{Prefix: prefix})
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, prefix, nil))
		if w.Code != http.StatusOK {
			b.Fatalf("status %d", w.Code)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/float64(b.N), "ms/render")
}
