package metrics

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// seriesOf counts the event series whose topic label is topic.
func seriesOf(t *testing.T, reg prometheus.Gatherer, topic string) int {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	n := 0
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "topic" && lp.GetValue() == topic {
					n++
				}
			}
		}
	}
	return n
}

// TestCollector_EventRacingAScrapeLeavesNoSeriesOfAGoneTopic: an event of
// a topic that is gone (a pull or a handler that ended as the topic was
// deleted) while a scrape drops that topic's series, the scrape landing
// between the event's look at the topic and its write. Before, the write
// made the series again after the scrape had forgotten the topic, and no
// later scrape dropped it: the series stayed for as long as the process
// ran. Now the next scrape drops it.
func TestCollector_EventRacingAScrapeLeavesNoSeriesOfAGoneTopic(t *testing.T) {
	for _, event := range []string{"pull", "handle"} {
		t.Run(event, func(t *testing.T) {
			c := New()
			e, err := equeue.Open("", &equeue.Options{InMemory: true, Observer: c})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			c.Attach(e)
			reg := prometheus.NewPedanticRegistry()
			require.NoError(t, reg.Register(c))

			observe := func() {
				if event == "pull" {
					c.ObservePull("gone", 0, time.Millisecond, 1)
					return
				}
				c.Hooks().AfterHandle(context.Background(), &equeue.Message{Topic: "gone"}, assert.AnError, time.Millisecond)
			}
			// The engine has no topic "gone": its events are those of a
			// deleted topic.
			observe()
			scraped := false
			c.obs.testHookWrite = func(string) {
				if !scraped {
					scraped = true
					_, err := reg.Gather() // forgets "gone" in the event's window
					require.NoError(t, err)
				}
			}
			observe()
			c.obs.testHookWrite = nil
			require.True(t, scraped, "the scrape ran within the event")

			assert.Zero(t, seriesOf(t, reg, "gone"), "the next scrape drops the gone topic's series")
			assert.Zero(t, seriesOf(t, reg, "gone"), "and they stay dropped")
		})
	}
}
