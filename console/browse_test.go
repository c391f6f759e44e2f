package console_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

func TestConsole_SearchByKeyAndID(t *testing.T) {
	e := openEngine(t)
	sd := seed(t, e)
	s := serve(t, e, console.Options{})

	pg := s.get(t, prefix+"topics/orders/messages?key="+sd.keyed)
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "8 found", "3 seeded orders and 5 updates carry the key")
	assert.Contains(t, pg.body, "Complete: every stored message was searched")
	assert.NotContains(t, pg.body, "customer-3")

	pg = s.get(t, prefix+"topics/orders/messages?id="+sd.poisonID)
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "1 found")
	assert.Contains(t, pg.body, "poison")

	pg = s.get(t, prefix+"topics/orders/messages?id=no-such-id")
	assert.Contains(t, pg.body, "0 found")
}

func TestConsole_BoundedSearchSaysItIsIncomplete(t *testing.T) {
	e := openEngine(t)
	sd := seed(t, e)
	s := serve(t, e, console.Options{ScanLimit: 8}) // 2 per queue of orders
	pg := s.get(t, prefix+"topics/orders/messages?key="+sd.keyed)
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "Incomplete result")
	assert.Contains(t, pg.body, "older not read")
	assert.NotContains(t, pg.body, "8 found")
}

func TestConsole_BrowseByOffsetAndTime(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	var mid time.Time
	for i := range 20 {
		r, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprintf("message-%02d", i))})
		require.NoError(t, err)
		if i == 12 {
			m, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: r.Offset, Max: 1})
			require.NoError(t, err)
			mid = m.Messages[0].StoredAt
		}
	}
	s := serve(t, e, console.Options{})
	pg := s.get(t, prefix+"topics/t/messages?from=5&count=3")
	require.Equal(t, http.StatusOK, pg.status)
	for i := range 20 {
		want := i >= 5 && i < 8
		assert.Equal(t, want, strings.Contains(pg.body, fmt.Sprintf("message-%02d", i)), "message %d shown", i)
	}
	assert.Contains(t, pg.body, prefix+"topics/t/messages?queue=0&from=8&count=3", "a link to the newer page")
	assert.Contains(t, pg.body, prefix+"topics/t/messages?queue=0&from=2&count=3", "a link to the older page")

	// By time: the page starts at the first message stored at or after it.
	pg = s.get(t, prefix+"topics/t/messages?count=2&at="+url.QueryEscape(mid.UTC().Format(time.RFC3339Nano)))
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "message-12")
	assert.NotContains(t, pg.body, "message-11")
	pg = s.get(t, prefix+"topics/t/messages?at="+url.QueryEscape(time.Now().Add(time.Hour).UTC().Format(time.RFC3339)))
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "No messages here")
}

func TestConsole_MessagePageShowsBodyViewsAndProgress(t *testing.T) {
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	// Offset 0 of queue 0 was consumed by billing; json is the default view.
	pg := s.get(t, prefix+"topics/orders/messages/0/0")
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "&#34;items&#34;: [", "pretty-printed JSON")
	assert.Contains(t, pg.body, "region")
	assert.Contains(t, pg.body, `<a href="/admin/groups/billing">billing</a>`)
	assert.Contains(t, pg.body, "consumed")
	pg = s.get(t, prefix+"topics/orders/messages/0/0?view=hex")
	assert.Contains(t, pg.body, "00000000  7b 22")
	pg = s.get(t, prefix+"topics/orders/messages/0/0?view=text")
	assert.Contains(t, pg.body, "{&#34;order&#34;:")
}

func TestConsole_RedriveSelectedAndAllWithARate(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	before, err := e.Topic(ctx, "orders")
	require.NoError(t, err)
	retryBefore, err := e.Topic(ctx, equeue.RetryTopic("billing"))
	require.NoError(t, err)

	tok := csrf(t, s.get(t, prefix+"groups/billing/dlq"))
	pg := s.post(t, prefix+"groups/billing/dlq/redrive", url.Values{"csrf": {tok}, "offset": {"0"}})
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "Redrive 1 dead letter(s) of billing?")
	assert.Contains(t, pg.body, "sent back to the group&#39;s retry topic")
	pg = s.post(t, prefix+"groups/billing/dlq/redrive", url.Values{"csrf": {tok}, "offset": {"0"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	assert.Equal(t, prefix+"groups/billing/dlq?done=redrive%3A1", pg.header.Get("Location"))
	assert.Equal(t, int64(1), added(t, e, retryBefore), "the dead letter is back in billing's retry topic")
	assert.Zero(t, added(t, e, before), "not in orders, which other groups consume")
	dl, err := e.ListDeadLetters(ctx, "billing", equeue.ListDeadLettersRequest{From: 0, Max: 10})
	require.NoError(t, err)
	assert.True(t, dl[0].Redriven)

	// Nothing is sent twice; "all" at a rate goes one by one.
	pg = s.post(t, prefix+"groups/billing/dlq/redrive", url.Values{"csrf": {tok}, "all": {"1"}, "rate": {"50"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	assert.Equal(t, prefix+"groups/billing/dlq?done=redrive%3A0", pg.header.Get("Location"))
	assert.Equal(t, int64(1), added(t, e, retryBefore))
	assert.Zero(t, added(t, e, before))
}

// added is how many messages orders gained since before.
func added(t *testing.T, e *equeue.Engine, before equeue.TopicInfo) int64 {
	t.Helper()
	now, err := e.Topic(ctxT(t), before.Name)
	require.NoError(t, err)
	var n int64
	for i, q := range now.Queues {
		n += q.MaxOffset - before.Queues[i].MaxOffset
	}
	return n
}

func TestConsole_DelayedPage(t *testing.T) {
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	pg := s.get(t, prefix+"delayed")
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, `<b id="delayed-count">7</b>`, "6 audit retries in an hour and one reminder")
	assert.Contains(t, pg.body, "in 59m")
}

func TestConsole_RedriveAllAtARateSendsEachOnce(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	for i := range 4 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte(fmt.Sprintf("job-%d", i))})
		require.NoError(t, err)
	}
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "workers", Subscriptions: []equeue.Subscription{{Topic: "jobs"}},
		Handler: func(context.Context, *equeue.Message) error {
			return equeue.DeadLetter(errors.New("no worker for this job"))
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	eventually(t, 20*time.Second, func() bool {
		dl, err := e.ListDeadLetters(ctx, "workers", equeue.ListDeadLettersRequest{From: 0, Max: 10})
		return err == nil && len(dl) == 4
	}, "four dead letters")
	require.NoError(t, c.Close())

	s := serve(t, e, console.Options{})
	tok := csrf(t, s.get(t, prefix+"groups/workers/dlq"))
	// One selected first, then all the others at 200/s: each is sent once.
	pg := s.post(t, prefix+"groups/workers/dlq/redrive", url.Values{"csrf": {tok}, "offset": {"2"}, "rate": {"200"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	pg = s.post(t, prefix+"groups/workers/dlq/redrive", url.Values{"csrf": {tok}, "all": {"1"}, "rate": {"200"}, "to_topic": {"1"}})
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "At most 200 per second")
	assert.Contains(t, pg.body, "sent back to its original topic")
	assert.Contains(t, pg.body, `name="to_topic" value="1"`, "the confirmation carries the choice")
	pg = s.post(t, prefix+"groups/workers/dlq/redrive", url.Values{"csrf": {tok}, "all": {"1"}, "rate": {"200"}, "to_topic": {"1"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	assert.Equal(t, prefix+"groups/workers/dlq?done=redrive%3A3", pg.header.Get("Location"))
	dl, err := e.ListDeadLetters(ctx, "workers", equeue.ListDeadLettersRequest{From: 0, Max: 10})
	require.NoError(t, err)
	for _, d := range dl {
		assert.True(t, d.Redriven, "dead letter %d", d.Offset)
	}
	ti, err := e.Topic(ctx, "jobs")
	require.NoError(t, err)
	assert.Equal(t, int64(7), ti.Queues[0].MaxOffset, "four jobs and the three redriven to the topic")
	ti, err = e.Topic(ctx, equeue.RetryTopic("workers"))
	require.NoError(t, err)
	assert.Equal(t, int64(1), ti.Queues[0].MaxOffset, "the one redriven to the group")
	pg = s.get(t, pg.header.Get("Location"))
	assert.Contains(t, pg.body, "3 dead letter(s) sent back")
	assert.Equal(t, 4, strings.Count(pg.body, `<span class="badge ok">redriven</span>`))
}
