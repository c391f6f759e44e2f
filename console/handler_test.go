package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// pages lists a GET of every page of the seeded engine.
var pages = []string{
	"", "topics/orders", "topics/%25DLQ%25billing", "topics/orders/messages", "topics/orders/messages?queue=1&from=0&count=5",
	"topics/orders/messages?key=customer-7", "topics/orders/messages?at=2000-01-01", "topics/orders/messages/0/0",
	"topics/orders/messages/0/0?view=hex", "groups/billing", "groups/billing/dlq", "groups/audit", "groups/audit/retry", "delayed",
	"?q=ord&tfrom=0&gfrom=0&ifrom=0", "?q=%25DLQ%25", "topics/orders?gfrom=0",
}

var urlAttrRE = regexp.MustCompile(`(?:href|src|action|formaction)="([^"]*)"`)

func TestConsole_EveryLinkStartsWithThePrefix(t *testing.T) {
	e := openEngine(t)
	seed(t, e)
	for _, pfx := range []string{"/admin/", "/ops/queues/"} {
		s := serve(t, e, console.Options{Prefix: strings.Trim(pfx, "/")}) // slashes are added
		for _, p := range pages {
			pg := s.get(t, pfx+p)
			require.Equal(t, http.StatusOK, pg.status, "%s%s: %s", pfx, p, pg.body)
			links := urlAttrRE.FindAllStringSubmatch(pg.body, -1)
			require.NotEmpty(t, links)
			for _, l := range links {
				u := l[1]
				ok := strings.HasPrefix(u, pfx) || strings.HasPrefix(u, "?") || strings.HasPrefix(u, "#")
				assert.True(t, ok, "page %s%s links to %q outside the prefix", pfx, p, u)
			}
		}
		// The prefix itself without its slash, and paths beside it, are the host's.
		assert.Equal(t, http.StatusTeapot, s.get(t, "/elsewhere").status)
		assert.Equal(t, http.StatusNotFound, s.get(t, pfx+"no/such/page").status)
	}
}

func TestConsole_StateChangesNeedPOSTWithCSRF(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	before, err := e.Group(ctx, "billing")
	require.NoError(t, err)
	reset := url.Values{"to": {"earliest"}, "confirm": {"1"}}

	// No token, a wrong one, and a token of another visitor are refused.
	pg := s.post(t, prefix+"groups/billing/reset", reset)
	assert.Equal(t, http.StatusForbidden, pg.status)
	assert.Contains(t, pg.body, "security token")
	reset.Set("csrf", "forged")
	assert.Equal(t, http.StatusForbidden, s.post(t, prefix+"groups/billing/reset", reset).status)
	other := serve(t, e, console.Options{})
	reset.Set("csrf", csrf(t, other.get(t, prefix+"groups/billing")))
	assert.Equal(t, http.StatusForbidden, s.post(t, prefix+"groups/billing/reset", reset).status, "a token from another console or visitor")
	// A GET does not change anything either.
	assert.Equal(t, http.StatusNotFound, s.get(t, prefix+"groups/billing/reset?to=earliest&confirm=1").status)
	after, err := e.Group(ctx, "billing")
	require.NoError(t, err)
	assert.Equal(t, before.Queues, after.Queues, "nothing changed")

	// With the page's token: first a confirmation page, then the change.
	tok := csrf(t, s.get(t, prefix+"groups/billing"))
	reset = url.Values{"to": {"earliest"}, "csrf": {tok}}
	pg = s.post(t, prefix+"groups/billing/reset", reset)
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, `name="confirm" value="1"`)
	after, err = e.Group(ctx, "billing")
	require.NoError(t, err)
	assert.Equal(t, before.Queues, after.Queues, "the confirmation page changed nothing")
	reset.Set("confirm", "1")
	pg = s.post(t, prefix+"groups/billing/reset", reset)
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	assert.Equal(t, prefix+"groups/billing?done=reset", pg.header.Get("Location"))
	after, err = e.Group(ctx, "billing")
	require.NoError(t, err)
	for _, q := range after.Queues {
		if q.Topic == "orders" {
			assert.Equal(t, int64(0), q.Committed, "%v reset to earliest", q.QueueRef)
		}
	}
}

func TestConsole_ResetOneQueueToAnOffset(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	tok := csrf(t, s.get(t, prefix+"groups/billing"))
	pg := s.post(t, prefix+"groups/billing/reset", url.Values{"csrf": {tok}, "to": {"offset"}, "queue": {"orders/2"}, "offset": {"1"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	g, err := e.Group(ctx, "billing")
	require.NoError(t, err)
	for _, q := range g.Queues {
		if q.QueueRef == (equeue.QueueRef{Topic: "orders", Queue: 2}) {
			assert.Equal(t, int64(1), q.Committed)
		}
	}
	for _, bad := range []url.Values{
		{"to": {"offset"}, "queue": {"payments/0"}, "offset": {"1"}},
		{"to": {"offset"}, "queue": {"orders/2"}, "offset": {"999999"}},
		{"to": {"offset"}, "queue": {"orders"}, "offset": {"1"}},
		{"to": {"time"}, "time": {"yesterday"}},
		{"to": {"sideways"}},
	} {
		bad.Set("csrf", tok)
		bad.Set("confirm", "1")
		pg := s.post(t, prefix+"groups/billing/reset", bad)
		assert.Equal(t, http.StatusBadRequest, pg.status, "%v: %s", bad, pg.body)
	}
}

func TestConsole_ReadOnlyRegistersNoWriteRoute(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	sd := seed(t, e)
	s := serve(t, e, console.Options{ReadOnly: true})
	for _, p := range pages {
		pg := s.get(t, prefix+p)
		require.Equal(t, http.StatusOK, pg.status, p)
		assert.NotContains(t, strings.ToLower(pg.body), `method="post"`, "%s offers no form that changes anything", p)
	}
	tok := csrf(t, serve(t, e, console.Options{}).get(t, prefix+"groups/billing")) // any token
	for _, w := range writes(tok) {
		pg := s.post(t, prefix+w.path, w.form)
		assert.Equal(t, http.StatusMethodNotAllowed, pg.status, w.path)
	}
	assertUnchanged(t, ctx, sd)
}

// write is one state-changing request, with confirm=1.
type write struct {
	path string
	form url.Values
}

func writes(tok string) []write {
	f := func(kv ...string) url.Values {
		v := url.Values{"csrf": {tok}, "confirm": {"1"}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Add(kv[i], kv[i+1])
		}
		return v
	}
	return []write{
		{"topics/orders/queues", f("count", "2")},
		{"topics/orders/queues/0/writable", f("writable", "false")},
		{"groups/billing/reset", f("to", "earliest")},
		{"groups/billing/dlq/redrive", f("all", "1")},
		{"groups/billing/dlq/redrive", f("offset", "0")},
	}
}

// assertUnchanged checks that no write of writes() took effect.
func assertUnchanged(t *testing.T, ctx context.Context, sd seeded) {
	t.Helper()
	e := sd.e
	ti, err := e.Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Len(t, ti.Queues, 4, "no queue added")
	for _, q := range ti.Queues {
		assert.True(t, q.Writable, "queue %d still writable", q.ID)
	}
	g, err := e.Group(ctx, "billing")
	require.NoError(t, err)
	assert.Equal(t, int64(5), lag(g), "offsets not reset")
	dl, err := e.ListDeadLetters(ctx, "billing", equeue.ListDeadLettersRequest{From: 0, Max: 10})
	require.NoError(t, err)
	require.Len(t, dl, 1)
	assert.False(t, dl[0].Redriven, "dead letter not redriven")
}

func TestConsole_BadInputGetsAClearPage(t *testing.T) {
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	for _, c := range []struct {
		path   string
		status int
		says   string
	}{
		{"topics/nosuch", 404, "topic"},
		{"topics/nosuch/messages", 404, "topic"},
		{"topics/bad%20name", 400, "invalid name"},
		{"topics/orders/messages?queue=9", 404, "no queue 9"},
		{"topics/orders/messages?queue=x", 400, "not a queue"},
		{"topics/orders/messages?from=999999", 400, "outside"},
		{"topics/orders/messages?from=-1", 400, "outside"},
		{"topics/orders/messages?from=abc", 400, "not an offset"},
		{"topics/orders/messages?count=100000000", 400, "page size"},
		{"topics/orders/messages?count=0", 400, "page size"},
		{"topics/orders/messages?at=someday", 400, "not a time"},
		{"topics/orders/messages/0/999999", 404, "no message at offset 999999"},
		{"topics/orders/messages/0/-5", 400, "non-negative"},
		{"topics/orders/messages/99/0", 404, ""},
		{"topics/orders/messages/0/99999999999999999999", 400, "non-negative"},
		{"groups/nosuch", 404, "group"},
		{"groups/nosuch/dlq", 404, "group"},
		{"groups/billing/dlq?from=77", 400, "outside"},
		{"groups/billing/dlq?count=1000000", 400, "page size"},
		{"?q=or%20der", 400, "filter"},
		{"?q=" + strings.Repeat("a", 300), 400, "filter"},
		{"?tfrom=-1", 400, "row"},
		{"?gfrom=x", 400, "row"},
		{"?ifrom=1e3", 400, "row"},
		{"?tfrom=99999999999999999999", 400, "row"},
		{"topics/orders?gfrom=-5", 400, "row"},
		{"static/nosuch.js", 404, ""},
		{"nothing/here", 404, "no page"},
	} {
		pg := s.get(t, prefix+c.path)
		assert.Equal(t, c.status, pg.status, "%s: %s", c.path, pg.body)
		assert.Contains(t, strings.ToLower(pg.body), strings.ToLower(c.says), c.path)
	}
	tok := csrf(t, s.get(t, prefix+"topics/orders"))
	for _, c := range []struct {
		path string
		form url.Values
	}{
		{"topics/orders/queues", url.Values{"count": {"100000"}}},
		{"topics/orders/queues", url.Values{"count": {"zero"}}},
		{"topics/orders/queues/x/writable", url.Values{"writable": {"false"}}},
		{"topics/orders/queues/0/writable", url.Values{"writable": {"maybe"}}},
		{"groups/billing/dlq/redrive", url.Values{}},
		{"groups/billing/dlq/redrive", url.Values{"offset": {"-3"}}},
		{"groups/billing/dlq/redrive", url.Values{"all": {"1"}, "rate": {"fast"}}},
		{"groups/billing/dlq/redrive", url.Values{"all": {"1"}, "rate": {"1e12"}}},
	} {
		c.form.Set("csrf", tok)
		c.form.Set("confirm", "1")
		pg := s.post(t, prefix+c.path, c.form)
		assert.Equal(t, http.StatusBadRequest, pg.status, "%s %v: %s", c.path, c.form, pg.body)
	}
	pg := s.post(t, prefix+"topics/orders/queues/7/writable", url.Values{"csrf": {tok}, "writable": {"true"}})
	assert.Equal(t, http.StatusNotFound, pg.status, pg.body)
}

func TestConsole_TopicActions(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	tok := csrf(t, s.get(t, prefix+"topics/orders"))
	pg := s.post(t, prefix+"topics/orders/queues", url.Values{"csrf": {tok}, "count": {"2"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	pg = s.post(t, prefix+"topics/orders/queues/1/writable", url.Values{"csrf": {tok}, "writable": {"false"}})
	require.Equal(t, http.StatusOK, pg.status)
	assert.Contains(t, pg.body, "Close queue 1 of orders", "closing asks first")
	pg = s.post(t, prefix+"topics/orders/queues/1/writable", url.Values{"csrf": {tok}, "writable": {"false"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	ti, err := e.Topic(ctx, "orders")
	require.NoError(t, err)
	require.Len(t, ti.Queues, 6)
	assert.False(t, ti.Queues[1].Writable)
	page := s.get(t, pg.header.Get("Location"))
	assert.Contains(t, page.body, "Queue closed to producers.")
	assert.Contains(t, page.body, "Open to producers")
}

func TestConsole_FlashShowsOnlyKnownText(t *testing.T) {
	e := openEngine(t)
	s := serve(t, e, console.Options{})
	pg := s.get(t, prefix+"?done="+url.QueryEscape("redrive:<script>x</script>"))
	assert.NotContains(t, pg.body, "<script>x")
	assert.NotContains(t, pg.body, `class="flash"`)
	pg = s.get(t, prefix+"?done=redrive:3")
	assert.Contains(t, pg.body, fmt.Sprintf("%d dead letter(s) sent back", 3))
}

// TestConsole_ConfirmPostsToTheEscapedPath closes a queue of the retry topic
// of a group whose name starts with two hex digits: the confirmation form
// posts to the path the request had, not to one where "%ca" of
// "%RETRY%cafe" reads as an escape.
func TestConsole_ConfirmPostsToTheEscapedPath(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "jobs", 1))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	_, err = p.Send(ctx, &equeue.Message{Topic: "jobs", Body: []byte("resize image 42")})
	require.NoError(t, err)
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "cafe", Member: "m1", Subscriptions: []equeue.Subscription{{Topic: "jobs"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	grant := a.Queues[0]
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "jobs", Queue: grant.Queue, Group: "cafe", Member: "m1", Epoch: grant.Epoch})
	require.NoError(t, err)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "cafe", Member: "m1", Grant: grant, Offset: 0, Attempts: 1, Cause: "timed out"})
	require.NoError(t, err)
	rt := equeue.RetryTopic("cafe")
	eventually(t, 10*time.Second, func() bool { _, err := e.Topic(ctx, rt); return err == nil }, "the retry topic exists")

	s := serve(t, e, console.Options{})
	path := prefix + "topics/" + url.PathEscape(rt) + "/queues/0/writable"
	tok := csrf(t, s.get(t, prefix+"topics/"+url.PathEscape(rt)))
	pg := s.post(t, path, url.Values{"csrf": {tok}, "writable": {"false"}})
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	m := regexp.MustCompile(`<form method="post" action="([^"]*)"[^>]*id="confirm-form"`).FindStringSubmatch(pg.body)
	require.NotNil(t, m, "a confirmation form")
	assert.Equal(t, path, m[1])
	pg = s.post(t, m[1], url.Values{"csrf": {tok}, "writable": {"false"}, "confirm": {"1"}})
	require.Equal(t, http.StatusSeeOther, pg.status, pg.body)
	ti, err := e.Topic(ctx, rt)
	require.NoError(t, err)
	assert.False(t, ti.Queues[0].Writable, "closed")
}

// TestConsole_PrefixIsAnyPath mounts the console at prefixes a route
// pattern cannot hold as they are (a space, braces): New does not panic,
// and the console serves at the escaped path and links there.
func TestConsole_PrefixIsAnyPath(t *testing.T) {
	e := openEngine(t)
	for _, pfx := range []string{"ops console", "{tenant}", "a{", "x;y/z"} {
		var h http.Handler
		require.NotPanics(t, func() { h = console.New(e, console.Options{Prefix: pfx}) }, pfx)
		srv := httptest.NewServer(h)
		s := &site{srv: srv, hc: srv.Client()}
		at := (&url.URL{Path: "/" + pfx + "/"}).EscapedPath()
		pg := s.get(t, at)
		require.Equal(t, http.StatusOK, pg.status, "%s: %s", at, pg.body)
		for _, l := range urlAttrRE.FindAllStringSubmatch(pg.body, -1) {
			if strings.HasPrefix(l[1], "#") {
				continue
			}
			u, err := url.Parse(l[1])
			require.NoError(t, err)
			assert.True(t, strings.HasPrefix(u.Path, "/"+pfx+"/"), "%s links to %q", pfx, l[1])
		}
		assert.Equal(t, http.StatusOK, s.get(t, at+"static/console.css").status, pfx)
		assert.Equal(t, http.StatusOK, s.get(t, at+"delayed").status, pfx)
		assert.Equal(t, http.StatusNotFound, s.get(t, "/elsewhere/").status, pfx)
		srv.Close()
	}
}
