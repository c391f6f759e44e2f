package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// BenchmarkOverview_Topics renders the overview and one topic's page of an
// in-process engine with 100, 1,000 and 5,000 topics (two queues each) and
// the page of a group subscribed to every topic (up to 1,000, within
// equeue.MaxSubscriptions), and reports the
// nanoseconds and the broker calls per page.
func BenchmarkOverview_Topics(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		ctx := ctxT(b)
		e := openEngine(b)
		for i := range n {
			require.NoError(b, e.CreateTopic(ctx, fmt.Sprintf("topic-%05d", i), 2))
		}
		subs := make([]equeue.Subscription, min(n, 1000))
		for i := range subs {
			subs[i].Topic = fmt.Sprintf("topic-%05d", i)
		}
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: subs})
		require.NoError(b, err)
		cb := &countingBroker{Engine: e}
		h := console.New(cb, console.Options{Prefix: prefix})
		for _, p := range []struct{ name, path string }{{"overview", prefix}, {"topic", prefix + "topics/topic-00000"}, {"group", prefix + "groups/g"}} {
			b.Run(fmt.Sprintf("topics=%d/page=%s", n, p.name), func(b *testing.B) {
				cb.calls.Store(0)
				pages := 0
				for b.Loop() {
					w := httptest.NewRecorder()
					h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, p.path, nil))
					if w.Code != http.StatusOK {
						b.Fatalf("status %d", w.Code)
					}
					pages++
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(pages), "ns/page")
				b.ReportMetric(float64(cb.calls.Load())/float64(pages), "calls/page")
			})
		}
	}
}
