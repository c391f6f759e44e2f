package console_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// TestGroupPage_BroadcastingGroupCountsEachQueueOnce: a broadcasting group
// has a row per member and queue, but it consumes each queue once: the
// group page's Queues card and its reset form's queue list name each of
// the topic's queues once, not once per member.
func TestGroupPage_BroadcastingGroupCountsEachQueueOnce(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "news", 3))
	for _, c := range startReaders(t, e) {
		t.Cleanup(func() { require.NoError(t, c.Close()) })
	}
	eventually(t, 30*time.Second, func() bool {
		g, err := e.Group(ctx, "readers")
		return err == nil && len(g.Members) == 2 && len(g.Queues) == 6
	}, "both members hold a row for each of the three queues")
	s := serve(t, e, console.Options{})

	body := s.get(t, prefix+"groups/readers").body
	card := func(k string) string {
		m := regexp.MustCompile(`<div class="k">` + k + `</div><div class="v">([^<]*)</div>`).FindStringSubmatch(body)
		require.Len(t, m, 2, "the %s card", k)
		return m[1]
	}
	assert.Equal(t, "2", card("Members"))
	assert.Equal(t, "3", card("Queues"), "three queues, whatever the number of members")
	sel := regexp.MustCompile(`(?s)<select name="queue">(.*?)</select>`).FindStringSubmatch(body)
	require.Len(t, sel, 2, "the reset form's queue list")
	for q := range 3 {
		opt := `<option value="news/` + string(rune('0'+q)) + `">`
		assert.Equal(t, 1, strings.Count(sel[1], opt), "%s in %s", opt, sel[1])
	}
}

// startReaders starts members "a" and "b" of the broadcasting group
// "readers" on topic "news" of e.
func startReaders(t *testing.T, e *equeue.Engine) []*equeue.Consumer {
	t.Helper()
	var cs []*equeue.Consumer
	for _, id := range []string{"a", "b"} {
		c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
			Group: "readers", ID: id, Model: equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "news"}},
			PullWait:      50 * time.Millisecond,
			Handler:       func(context.Context, *equeue.Message) error { return nil },
		})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctxT(t)))
		cs = append(cs, c)
	}
	return cs
}
