package console_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

var (
	progressRowRE = regexp.MustCompile(`<tr><td><a href="[^"]*">([^<]*)</a>/(\d+)</td>`)
	memberRowRE   = regexp.MustCompile(`<tr><td><code>([^<]*)</code></td>`)
)

// progressRows are the "topic/queue" of a progress panel's rows, in order.
func progressRows(panel string) []string {
	var out []string
	for _, m := range progressRowRE.FindAllStringSubmatch(panel, -1) {
		out = append(out, m[1]+"/"+m[2])
	}
	return out
}

// memberRows are the member IDs of a members panel's rows, in order.
func memberRows(panel string) []string {
	var out []string
	for _, m := range memberRowRE.FindAllStringSubmatch(panel, -1) {
		out = append(out, m[1])
	}
	return out
}

// walkGroupPanel follows a group page panel's next links from path and
// returns every row rows reads in it, page after page, and how many pages
// it took. No page shows more than shownRows rows.
func walkGroupPanel(t *testing.T, s *site, path, id string, rows func(string) []string) (all []string, pages int) {
	t.Helper()
	for path != "" && pages < 100 {
		pg := s.get(t, path)
		require.Equal(t, http.StatusOK, pg.status, "%s: %s", path, pg.body)
		panel := panelOf(t, pg.body, id)
		got := rows(panel)
		require.LessOrEqual(t, len(got), shownRows, "%s: rows of %s", path, id)
		all = append(all, got...)
		pages++
		path = nextLink(panel)
		if path != "" {
			require.True(t, strings.HasPrefix(path, prefix+"groups/wide"), "%s links to its next rows on the group's page: %q", id, path)
		}
	}
	return all, pages
}

// TestGroupPage_BoundedPagesOfQueuesAndMembers: a group on 150 queues with
// 105 members has a page whose progress and members tables show at most
// shownRows rows each, in order (topic, then queue number; member ID),
// with the count and a next link that reaches every row once; a name
// prefix filter narrows them (progress rows by topic, members by ID) and
// the next links keep it. Before, both tables showed every row: thousands
// of queues or members made a page of megabytes, every 5 s.
func TestGroupPage_BoundedPagesOfQueuesAndMembers(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "alpha", 120))
	require.NoError(t, e.CreateTopic(ctx, "beta", 30))
	const members = shownRows + 5
	var memberIDs, queues []string
	for i := range members {
		id := fmt.Sprintf("m-%03d", i)
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "wide", Member: id,
			Subscriptions: []equeue.Subscription{{Topic: "alpha"}, {Topic: "beta"}}})
		require.NoError(t, err)
		memberIDs = append(memberIDs, id)
	}
	for q := range 120 {
		queues = append(queues, fmt.Sprintf("alpha/%d", q))
	}
	for q := range 30 {
		queues = append(queues, fmt.Sprintf("beta/%d", q))
	}
	s := serve(t, e, console.Options{})

	first := s.get(t, prefix+"groups/wide")
	require.Equal(t, http.StatusOK, first.status, first.body)
	assert.Contains(t, panelOf(t, first.body, "progress"), "of 150", "the progress table says how many rows it has")
	assert.Contains(t, panelOf(t, first.body, "members"), fmt.Sprintf("of %d", members))

	t.Run("every row once, page by page", func(t *testing.T) {
		rows, pages := walkGroupPanel(t, s, prefix+"groups/wide", "progress", progressRows)
		assert.Equal(t, queues, rows)
		assert.Equal(t, 2, pages)
		rows, pages = walkGroupPanel(t, s, prefix+"groups/wide", "members", memberRows)
		assert.Equal(t, memberIDs, rows)
		assert.Equal(t, 2, pages)
	})

	t.Run("a member lists its first queues and counts the others", func(t *testing.T) {
		g, err := e.Group(ctx, "wide")
		require.NoError(t, err)
		require.Equal(t, "m-000", g.Members[0].ID)
		require.Len(t, g.Members[0].Queues, 150, "the first member holds every queue until it heartbeats")
		panel := panelOf(t, first.body, "members")
		row := regexp.MustCompile(`<tr><td><code>m-000</code></td><td>([^\n]*?)</td></tr>`).FindStringSubmatch(panel)
		require.Len(t, row, 2, "m-000's row")
		assert.Equal(t, shownRows-1, strings.Count(row[1], ", "), "its first %d queues", shownRows)
		assert.Contains(t, row[1], "and 50 more")
	})

	t.Run("a name prefix narrows both tables", func(t *testing.T) {
		pg := s.get(t, prefix+"groups/wide?q=beta")
		require.Equal(t, http.StatusOK, pg.status, pg.body)
		assert.Equal(t, queues[120:], progressRows(panelOf(t, pg.body, "progress")))
		assert.Empty(t, memberRows(panelOf(t, pg.body, "members")))
		assert.Contains(t, pg.body, `value="beta"`, "the filter box keeps the filter")

		pg = s.get(t, prefix+"groups/wide?q=m-10")
		require.Equal(t, http.StatusOK, pg.status, pg.body)
		assert.Empty(t, progressRows(panelOf(t, pg.body, "progress")))
		assert.Equal(t, memberIDs[100:], memberRows(panelOf(t, pg.body, "members")))

		rows, _ := walkGroupPanel(t, s, prefix+"groups/wide?q=alpha", "progress", progressRows)
		assert.Equal(t, queues[:120], rows, "the next links keep the filter")
	})

	t.Run("rows past the end are an empty page", func(t *testing.T) {
		for _, from := range []string{"500", "9223372036854775807"} {
			for k, id := range map[string]string{"pfrom": "progress", "mfrom": "members"} {
				pg := s.get(t, prefix+"groups/wide?"+k+"="+from)
				require.Equal(t, http.StatusOK, pg.status, pg.body)
				panel := panelOf(t, pg.body, id)
				assert.Empty(t, progressRows(panel), "%s %s", id, from)
				assert.Empty(t, memberRows(panel), "%s %s", id, from)
				assert.Contains(t, panel, `href="`+prefix+`groups/wide#`+id+`"`, "%s %s: a link to the first rows", id, from)
				assert.NotContains(t, panel, "No rows from -", "%s %s: the row number does not wrap around", id, from)
			}
		}
		assert.Equal(t, http.StatusBadRequest, s.get(t, prefix+"groups/wide?pfrom=-1").status)
		assert.Equal(t, http.StatusBadRequest, s.get(t, prefix+"groups/wide?q=a/b").status)
	})
}

// TestGroupPage_NoCountLineWhenEveryRowShows: the count line of the group
// page's tables shows only when rows were left out (other pages, or the
// filter); a group whose rows all fit shows its tables as they are.
func TestGroupPage_NoCountLineWhenEveryRowShows(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "orders", 3))
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "billing", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "orders"}}})
	require.NoError(t, err)
	s := serve(t, e, console.Options{})
	pg := s.get(t, prefix+"groups/billing")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	for _, id := range []string{"progress", "members"} {
		assert.NotContains(t, panelOf(t, pg.body, id), `class="pager`, id)
	}
	assert.Equal(t, []string{"orders/0", "orders/1", "orders/2"}, progressRows(panelOf(t, pg.body, "progress")))

	pg = s.get(t, prefix+"groups/billing?q=x")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	for _, id := range []string{"progress", "members"} {
		assert.Contains(t, panelOf(t, pg.body, id), `class="pager`, "%s: the filter left rows out", id)
	}
}
