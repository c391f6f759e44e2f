package console_test

import (
	"context"
	"errors"
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

// xss is a payload that breaks out of an attribute and opens elements when
// it reaches a page unescaped.
const xss = `"'><script>xss()</script><img src=x onerror=xss()>`

// xssRaw are the parts of xss that only an unescaped payload puts on a
// page: the console's own HTML holds none of them.
var xssRaw = []string{`"'><`, "<script>xss", "<img src=x"}

// xssSeeded stores messages whose ID, tag, keys, properties and body are
// the payload, and the payload as a retry's and a dead letter's error, and
// keeps a clustering and a broadcasting member whose IDs are the payload
// (topic and group names allow only [A-Za-z0-9._-]) until the test ends.
func xssSeeded(t *testing.T, e *equeue.Engine) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "xss", 2))
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer p.Close()
	for _, kind := range []string{"ok", "retry", "dead"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "xss", ID: xss + kind, Tag: xss, Keys: []string{xss, kind},
			Properties: map[string]string{xss: xss}, Body: []byte(xss)})
		require.NoError(t, err)
	}
	_, err = p.Send(ctx, &equeue.Message{Topic: "xss", Keys: []string{"json"}, Body: []byte(`{"` + strings.ReplaceAll(xss, `"`, `\"`) + `":1}`)})
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "xss", Keys: []string{"later"}, Body: []byte(xss), Delay: time.Hour})
	require.NoError(t, err)

	handled := make(chan struct{}, 16)
	// The retry's second attempt waits until the test ends: the retry
	// stays pending on the retry page.
	release := make(chan struct{})
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "xss-cl", ID: xss + "cl", Subscriptions: []equeue.Subscription{{Topic: "xss"}}, CommitInterval: 10 * time.Millisecond,
		RetryTopicDelays: []time.Duration{time.Millisecond}, MaxAttempts: 3,
		Handler: func(_ context.Context, m *equeue.Message) error {
			switch {
			case m.Attempt > 0:
				<-release
				return nil
			case len(m.Keys) > 1 && m.Keys[1] == "dead":
				return equeue.DeadLetter(errors.New(xss))
			case len(m.Keys) > 1 && m.Keys[1] == "retry":
				return errors.New(xss)
			}
			handled <- struct{}{}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	t.Cleanup(func() { close(release) })
	b, err := equeue.NewConsumer(e, equeue.ConsumerOptions{
		Group: "xss-bc", ID: xss + "bc", Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "xss"}}, CommitInterval: 10 * time.Millisecond,
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, b.Start(ctx))
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	eventually(t, 20*time.Second, func() bool {
		dl, err := e.ListDeadLetters(ctx, "xss-cl", equeue.ListDeadLettersRequest{Max: 10})
		rt, rerr := e.Topic(ctx, equeue.RetryTopic("xss-cl"))
		bc, berr := e.Group(ctx, "xss-bc")
		return err == nil && len(dl) == 1 && rerr == nil && rt.Messages == 1 &&
			berr == nil && len(bc.Members) == 1 && lag(bc) == 0 && len(handled) == 2
	}, "the payload reached the dead letters, the retries and both groups")
}

// assertNoXSS fails when a page shows the payload unescaped.
func assertNoXSS(t *testing.T, where string, p page) {
	t.Helper()
	for _, raw := range xssRaw {
		assert.NotContains(t, p.body, raw, "%s (HTTP %d) shows the payload unescaped", where, p.status)
	}
}

// TestConsole_NoPayloadReachesAPageUnescaped puts an HTML payload in every
// field the console shows that a producer or consumer chooses (message ID,
// tag, keys, property names and values, text and JSON bodies, member IDs,
// a retry's and a dead letter's error) and in every query, path and form
// value a visitor chooses, walks every page the console links to from the
// overview, and finds the payload escaped everywhere.
func TestConsole_NoPayloadReachesAPageUnescaped(t *testing.T) {
	e := openEngine(t)
	xssSeeded(t, e)
	s := serve(t, e, console.Options{})

	seen := map[string]bool{}
	queue := []string{prefix}
	shown := map[string]bool{} // pages that show the payload, escaped
	for len(queue) > 0 && len(seen) < 400 {
		u := queue[0]
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		pg := s.get(t, u)
		require.Equal(t, http.StatusOK, pg.status, "%s: %s", u, pg.body)
		assertNoXSS(t, u, pg)
		shown[u] = strings.Contains(pg.body, "&lt;script&gt;xss()")
		base, err := url.Parse(u)
		require.NoError(t, err)
		for _, l := range urlAttrRE.FindAllStringSubmatch(pg.body, -1) {
			ref, err := url.Parse(strings.ReplaceAll(l[1], "&amp;", "&"))
			require.NoError(t, err, "%s links to %q", u, l[1])
			next := base.ResolveReference(ref)
			next.Fragment = ""
			if strings.HasPrefix(next.Path, prefix+"static/") || next.Path == prefix+"logout" || !strings.HasPrefix(next.Path, prefix) {
				continue
			}
			if strings.HasPrefix(l[0], "action") {
				continue // a form: posted below
			}
			queue = append(queue, next.RequestURI())
		}
	}
	require.Empty(t, queue, "the walk ended before it saw every page")
	for _, must := range []string{"groups/xss-cl", "groups/xss-cl/dlq", "groups/xss-cl/retry", "groups/xss-bc"} {
		assert.True(t, shown[prefix+must], "the walk reached %s, which shows the payload (escaped)", must)
	}
	for _, view := range []string{"text", "json", "hex"} {
		n := 0
		for u, ok := range shown {
			if ok && strings.HasPrefix(u, prefix+"topics/xss/messages/") && strings.HasSuffix(u, "?view="+view) {
				n++
			}
		}
		assert.Equal(t, 4, n, "the walk reached the %s view of each message, which shows the payload (escaped)", view)
	}

	// What a visitor types: queries, paths and form values.
	q := url.QueryEscape(xss)
	for _, u := range []string{
		"topics/xss/messages?key=" + q, "topics/xss/messages?id=" + q, "topics/xss/messages?at=" + q,
		"topics/xss/messages?count=" + q, "topics/xss/messages?queue=" + q, "topics/xss/messages?from=" + q,
		"topics/xss/messages/0/0?view=" + q, "topics/" + url.PathEscape(xss), "topics/" + url.PathEscape(xss) + "/messages",
		"groups/" + url.PathEscape(xss), "groups/" + url.PathEscape(xss) + "/dlq", "groups/xss-cl/dlq?from=" + q,
		"groups/xss-cl/dlq?count=" + q, "topics/xss/messages/" + url.PathEscape(xss) + "/0", url.PathEscape(xss), "?done=" + q,
		"?q=" + q, "?tfrom=" + q, "?gfrom=" + q, "?ifrom=" + q, "?q=xss&tfrom=" + q, "topics/xss?gfrom=" + q,
	} {
		assertNoXSS(t, u, s.get(t, prefix+u))
	}
	tok := csrf(t, s.get(t, prefix+"groups/xss-cl"))
	for _, w := range []write{
		{"groups/xss-cl/reset", url.Values{"to": {"time"}, "time": {xss}}},
		{"groups/xss-cl/reset", url.Values{"to": {"offset"}, "queue": {xss + "/0"}, "offset": {"0"}}},
		{"groups/xss-cl/reset", url.Values{"to": {"offset"}, "queue": {"xss/0"}, "offset": {xss}}},
		{"groups/xss-cl/reset", url.Values{"to": {xss}}},
		{"groups/xss-cl/dlq/redrive", url.Values{"offset": {xss}}},
		{"groups/xss-cl/dlq/redrive", url.Values{"offset": {"0"}, "rate": {xss}}},
		{"topics/xss/queues", url.Values{"count": {xss}}},
		{"topics/xss/queues/0/writable", url.Values{"writable": {xss}}},
		{"topics/xss/queues/" + url.PathEscape(xss) + "/writable", url.Values{"writable": {"false"}}},
		{"groups/" + url.PathEscape(xss) + "/reset", url.Values{"to": {"earliest"}}},
		{"groups/" + url.PathEscape(xss) + "/dlq/redrive", url.Values{"all": {"1"}}},
	} {
		w.form.Set("csrf", tok)
		assertNoXSS(t, w.path, s.post(t, prefix+w.path, w.form))
	}

	// The login form: its next target and a refused sign-in.
	ls := serve(t, e, console.Options{Tokens: tokens})
	lp := ls.get(t, prefix+"login?next="+url.QueryEscape(prefix+xss))
	require.Equal(t, http.StatusOK, lp.status)
	assertNoXSS(t, "login", lp)
	assertNoXSS(t, "login POST", ls.post(t, prefix+"login", url.Values{"csrf": {csrf(t, lp)}, "token": {xss}, "next": {prefix + xss}}))
	assertNoXSS(t, "redirect to login", ls.get(t, prefix+"topics/"+url.PathEscape(xss)))
}
