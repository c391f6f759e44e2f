package console_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// TestBrowser_GroupPageRowPages: in a browser, the progress table of a
// group on 150 queues shows 100 rows and its count line; its next link
// shows the other 50; the filter box narrows it to a topic's queues, and
// the page's live refresh keeps the filter.
func TestBrowser_GroupPageRowPages(t *testing.T) {
	b := newBrowser(t)
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "alpha", 120))
	require.NoError(t, e.CreateTopic(ctx, "beta", 30))
	offsets := map[equeue.QueueRef]int64{}
	for q := range 120 {
		offsets[equeue.QueueRef{Topic: "alpha", Queue: q}] = 0
	}
	for q := range 30 {
		offsets[equeue.QueueRef{Topic: "beta", Queue: q}] = 0
	}
	require.NoError(t, e.CommitGroupOffsets(ctx, "wide", offsets))
	s := serve(t, e, console.Options{})
	base := s.srv.URL + prefix
	rows := func() int { return eval[int](b, `document.querySelectorAll('#progress tbody tr').length`) }

	b.do(chromedp.Navigate(base+"groups/wide"), chromedp.WaitVisible(chromedp.ID("progress")))
	assert.Equal(t, 100, rows())
	assert.Contains(t, b.text("#progress .pager"), "1–100 of 150")
	b.do(chromedp.Click(chromedp.CSS(`#progress a[rel=next]`)))
	b.until(`location.search.includes("pfrom=100") && document.querySelectorAll('#progress tbody tr').length === 50`)

	b.do(chromedp.SendKeys(chromedp.ID("filter"), "beta"), chromedp.Click(chromedp.CSS(`#filter-form button`)))
	b.until(`location.search === "?q=beta" && document.querySelectorAll('#progress tbody tr').length === 30`)
	assert.Contains(t, b.text("#progress .pager"), "matching “beta” (150 in all)")
	// Mark the table, wait for the refresh to replace it, and count again.
	b.do(chromedp.Evaluate[chromedp.Void](`document.getElementById("progress").dataset.old = "1"`))
	b.until(`!document.getElementById("progress").dataset.old`)
	assert.Equal(t, 30, rows(), "the refresh keeps the filter")
	b.noErrors()
}
