package console_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// The browser tests drive Debian's chromium through chromedp. Without a
// browser they skip, unless CI is set: then they fail. Screenshots go to
// EQUEUE_SCREENSHOTS when set (the README's pictures come from
// EQUEUE_SCREENSHOTS=$PWD/docs/console), else to the test's artifact dir.

// findBrowser returns the path of a Chromium or Chrome binary.
func findBrowser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no chromium found: CI must install it (apt-get install chromium)")
	}
	t.Skip("no chromium found: install it (apt-get install chromium) to run the browser tests")
	return ""
}

// browser is one headless Chromium tab that records JavaScript exceptions
// and console and log errors.
type browser struct {
	t   *testing.T
	ctx context.Context

	mu      sync.Mutex
	errs    []string
	allowed []string // URLs whose failed loads are expected
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	exe := findBrowser(t)
	b := &browser{t: t}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.Headless,
		chromedp.DisableGPU, chromedp.WindowSize(1366, 900))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithListener(b.listen))
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	b.ctx = ctx
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("about:blank")), "start chromium")
	return b
}

func (b *browser) listen(ev any) {
	var msg, url string
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		msg = "exception: " + ev.ExceptionDetails.Text
		if ev.ExceptionDetails.Exception != nil {
			msg += " " + ev.ExceptionDetails.Exception.Description
		}
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.ConsoleAPICalledTypeError && ev.Type != runtime.ConsoleAPICalledTypeAssert {
			return
		}
		var parts []string
		for _, a := range ev.Args {
			parts = append(parts, string(a.Value)+a.Description)
		}
		msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
	case *log.EventEntryAdded:
		if ev.Entry.Level != log.EntryLevelError {
			return
		}
		msg, url = "log ("+string(ev.Entry.Source)+"): "+ev.Entry.Text+" "+ev.Entry.URL, ev.Entry.URL
	default:
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, a := range b.allowed {
		if url != "" && strings.HasSuffix(url, a) {
			return
		}
	}
	b.errs = append(b.errs, msg)
}

// allow expects failed loads of URLs ending in suffix (refused POSTs).
func (b *browser) allow(suffix string) {
	b.mu.Lock()
	b.allowed = append(b.allowed, suffix)
	b.mu.Unlock()
}

// noErrors fails the test on any recorded JavaScript or console error.
func (b *browser) noErrors() {
	b.t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	assert.Empty(b.t, b.errs, "JavaScript exceptions or console errors")
}

func (b *browser) do(steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	require.NoError(b.t, chromedp.Do(b.ctx, steps...))
}

// until waits for a JavaScript condition to hold, across navigations (a
// condition on the next page).
func (b *browser) until(js string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](js))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("timed out waiting for %s (last error: %v)", js, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(b.t, err, sel)
	return s
}

func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	require.NoError(b.t, err, js)
	return v
}

// shot saves a full-page PNG of the current page as name.png.
func (b *browser) shot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	require.True(b.t, bytes.HasPrefix(png, []byte("\x89PNG")), "a PNG")
	dir := os.Getenv("EQUEUE_SCREENSHOTS")
	if dir == "" {
		dir = b.t.ArtifactDir()
	}
	require.NoError(b.t, os.MkdirAll(dir, 0o755))
	require.NoError(b.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// traffic sends to orders and consumes it in group shipping until the test
// ends, so the overview's charts move.
func traffic(t *testing.T, e *equeue.Engine) {
	ctx, cancel := context.WithCancel(context.Background())
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "shipping", Subscriptions: []equeue.Subscription{{Topic: "payments"}},
		CommitInterval: 200 * time.Millisecond, Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(25 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			_, err := p.Send(ctx, &equeue.Message{Topic: "payments", Keys: []string{fmt.Sprintf("pay-%d", i%50)}, Body: []byte(fmt.Sprintf(`{"payment":%d,"amount":%d}`, i, 10+i%90))})
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("traffic: %v", err)
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		assert.NoError(t, c.Close())
		assert.NoError(t, p.Close())
	})
}

func TestBrowser_OperatorTour(t *testing.T) {
	b := newBrowser(t)
	ctx := ctxT(t)
	e := openEngine(t)
	sd := seed(t, e)
	s := serve(t, e, console.Options{Tokens: tokens, Title: "equeue · demo"})
	traffic(t, e)
	base := s.srv.URL + prefix

	// Sign in on the form.
	b.do(chromedp.Navigate(base), chromedp.WaitVisible(chromedp.ID("token")))
	b.shot("login")
	b.do(chromedp.SendKeys(chromedp.ID("token"), "admin-secret"), chromedp.Click(chromedp.ID("sign-in")), chromedp.WaitVisible(chromedp.ID("topics")))

	// The overview refreshes itself: wait until the chart holds samples.
	_, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](`Number(document.querySelector('#rates svg').dataset.samples) >= 3`,
		chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second)))
	require.NoError(t, err, "the overview's live chart fills")
	assert.Contains(t, b.text("#groups"), "billing")
	b.shot("overview")

	// Topic, then its messages.
	b.do(chromedp.Click(chromedp.CSS(`#topics a[href="`+prefix+`topics/orders"]`)), chromedp.WaitVisible(chromedp.ID("queues")))
	assert.Contains(t, b.text("h1"), "orders")
	b.shot("topic")
	b.do(chromedp.Click(chromedp.CSS(`a[href="`+prefix+`topics/orders/messages"]`)), chromedp.WaitVisible(chromedp.ID("key-form")))

	// Search by key, then by ID.
	b.do(chromedp.SendKeys(chromedp.ID("key"), sd.keyed), chromedp.Click(chromedp.ID("search-key")), chromedp.WaitVisible(chromedp.CSS(".ok-note")))
	assert.Contains(t, b.text("section.panel h2"), "8 found")
	b.shot("search-by-key")
	b.do(chromedp.SendKeys(chromedp.ID("msgid"), sd.poisonID), chromedp.Click(chromedp.ID("search-id")))
	b.until(`location.search.includes("id=")`)
	b.do(chromedp.WaitVisible(chromedp.CSS(".ok-note")))
	assert.Contains(t, b.text("section.panel h2"), "1 found")
	b.do(chromedp.Click(chromedp.CSS(`table.messages td.r a`)), chromedp.WaitVisible(chromedp.ID("message-id")))
	assert.Equal(t, sd.poisonID, b.text("#message-id"))
	b.do(chromedp.Navigate(base+"topics/orders/messages/1/0"), chromedp.WaitVisible(chromedp.ID("body")))
	assert.Contains(t, b.text("#body"), `"items": [`, "JSON pretty-printed")
	b.shot("message")

	// Message -> its group's progress; reset one queue's offset with confirmation.
	b.do(chromedp.Click(chromedp.CSS(`a[href="`+prefix+`groups/billing"]`)), chromedp.WaitVisible(chromedp.ID("progress")))
	b.shot("group")
	b.do(chromedp.SetValue(chromedp.CSS(`#reset-form select[name=queue]`), "orders/2"), chromedp.SendKeys(chromedp.ID("reset-offset"), "1"),
		chromedp.Click(chromedp.ID("reset-submit")), chromedp.WaitVisible(chromedp.ID("confirm")))
	assert.Contains(t, b.text("h1"), "Reset the offsets of group billing")
	b.shot("confirm-reset")
	b.do(chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("flash")))
	g, err := e.Group(ctx, "billing")
	require.NoError(t, err)
	for _, q := range g.Queues {
		if q.QueueRef == (equeue.QueueRef{Topic: "orders", Queue: 2}) {
			assert.Equal(t, int64(1), q.Committed, "the engine holds the reset offset")
		}
	}

	// Group -> its dead letters; redrive one by clicking.
	b.do(chromedp.Click(chromedp.CSS(`a[href="`+prefix+`groups/billing/dlq"]`)), chromedp.WaitVisible(chromedp.ID("redrive-form")))
	b.shot("dead-letters")
	b.do(chromedp.Click(chromedp.CSS(`input[name=offset][value="0"]`)), chromedp.Click(chromedp.ID("redrive-selected")), chromedp.WaitVisible(chromedp.ID("confirm")))
	b.do(chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("flash")))
	assert.Contains(t, b.text("#flash"), "1 dead letter(s) sent back")
	dl, err := e.ListDeadLetters(ctx, "billing", equeue.ListDeadLettersRequest{From: 0, Max: 10})
	require.NoError(t, err)
	require.Len(t, dl, 1)
	assert.True(t, dl[0].Redriven)
	assert.Equal(t, 1, countBodies(t, e, equeue.RetryTopic("billing"), `{"order":"poison"}`), "the dead letter is back in billing's retry topic")
	assert.Equal(t, 1, countBodies(t, e, "orders", `{"order":"poison"}`), "not in orders, which other groups consume")

	// Retries and delayed messages.
	b.do(chromedp.Navigate(base+"groups/audit/retry"), chromedp.WaitVisible(chromedp.ID("retries")))
	b.do(chromedp.Click(chromedp.CSS(`a[href="`+prefix+`delayed"]`)), chromedp.WaitVisible(chromedp.ID("delayed-count")))
	assert.Equal(t, "7", b.text("#delayed-count"))
	b.shot("delayed")
	b.noErrors()
}

// countBodies counts the messages of a topic with this body.
func countBodies(t *testing.T, e *equeue.Engine, topic, body string) int {
	t.Helper()
	ctx := ctxT(t)
	ti, err := e.Topic(ctx, topic)
	require.NoError(t, err)
	n := 0
	for _, q := range ti.Queues {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q.ID, Offset: q.MinOffset, Max: 1024})
		require.NoError(t, err)
		for _, m := range res.Messages {
			if string(m.Body) == body {
				n++
			}
		}
	}
	return n
}

// TestBrowser_NoWayToChangeAnything visits every page as a read-only console
// and as a consume-only token: no form changes anything, and POSTs sent from
// the page itself are refused.
func TestBrowser_NoWayToChangeAnything(t *testing.T) {
	b := newBrowser(t)
	ctx := ctxT(t)
	e := openEngine(t)
	sd := seed(t, e)
	for _, c := range []struct {
		name   string
		o      console.Options
		status int
	}{
		{"read-only", console.Options{ReadOnly: true}, 405},
		{"consume-only", console.Options{Tokens: tokens}, 403},
	} {
		s := serve(t, e, c.o)
		base := s.srv.URL + prefix
		if c.o.Tokens != nil {
			b.do(chromedp.Navigate(base+"login"), chromedp.WaitVisible(chromedp.ID("token")),
				chromedp.SendKeys(chromedp.ID("token"), "watcher-secret"), chromedp.Click(chromedp.ID("sign-in")), chromedp.WaitVisible(chromedp.ID("topics")))
		}
		for _, p := range pages {
			b.do(chromedp.Navigate(base + p))
			n := eval[int](b, `document.querySelectorAll('form[method=post]:not([action$="/logout"])').length`)
			assert.Zero(t, n, "%s %s: forms that change state", c.name, p)
			buttons := eval[int](b, `[...document.querySelectorAll('button')].filter(x => !x.closest('form[method=get]') && !x.closest('form[action$="/logout"]')).length`)
			assert.Zero(t, buttons, "%s %s: action buttons", c.name, p)
		}
		if c.name == "read-only" {
			b.do(chromedp.Navigate(base + "groups/billing"))
			b.shot("read-only-group")
		}
		// POST straight from the page, with the page's own CSRF token when it has one.
		for _, w := range writes("") {
			b.allow(w.path)
			js := fmt.Sprintf(`(async () => {
				const tok = document.querySelector('input[name=csrf]');
				const f = new URLSearchParams(%q);
				if (tok) f.set('csrf', tok.value);
				const r = await fetch(%q, {method: 'POST', body: f, credentials: 'same-origin'});
				return r.status;
			})()`, w.form.Encode(), prefix+w.path)
			assert.Equal(t, c.status, eval[int](b, js), "%s POST %s", c.name, w.path)
		}
	}
	assertUnchanged(t, ctx, sd)
	b.noErrors()
}
