package console_test

import (
	"fmt"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

var resetOptionRE = regexp.MustCompile(`<option value="([^"]*)">`)

// resetOptions are the queues the reset form of a group page offers, in
// order.
func resetOptions(t *testing.T, body string) []string {
	t.Helper()
	sel := regexp.MustCompile(`(?s)<select name="queue">(.*?)</select>`).FindStringSubmatch(body)
	require.Len(t, sel, 2, "the reset form's queue list")
	var out []string
	for _, m := range resetOptionRE.FindAllStringSubmatch(sel[1], -1) {
		out = append(out, m[1])
	}
	return out
}

// TestGroupPage_ResetFormListsTheShownQueues: the reset form of a group
// on 150 queues offers the queues of the progress rows shown (the page,
// the filter), not every queue of the group, so that the page (fetched
// again every 5 s) stays bounded as its tables are; the Queues card still
// counts every queue.
// Before, the form listed every queue: for a viewer who may act, the page
// still grew with the group's queues.
func TestGroupPage_ResetFormListsTheShownQueues(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "alpha", 120))
	require.NoError(t, e.CreateTopic(ctx, "beta", 30))
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "wide", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "alpha"}, {Topic: "beta"}}})
	require.NoError(t, err)
	var queues []string
	for q := range 120 {
		queues = append(queues, fmt.Sprintf("alpha/%d", q))
	}
	for q := range 30 {
		queues = append(queues, fmt.Sprintf("beta/%d", q))
	}
	s := serve(t, e, console.Options{})

	pg := s.get(t, prefix+"groups/wide")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Contains(t, pg.body, `<div class="k">Queues</div><div class="v">150</div>`, "the card counts every queue")
	assert.Equal(t, queues[:shownRows], resetOptions(t, pg.body), "the queues of the first page of progress rows")

	pg = s.get(t, prefix+"groups/wide?pfrom=100")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Equal(t, queues[shownRows:], resetOptions(t, pg.body), "the queues of the next page")

	pg = s.get(t, prefix+"groups/wide?q=beta")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	assert.Equal(t, queues[120:], resetOptions(t, pg.body), "the queues the filter leaves")
}
