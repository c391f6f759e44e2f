package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// shownRows is how many rows a table of all topics or groups shows at
// once, as the README says.
const shownRows = 100

// panelOf is the panel of a page with that id, up to its end.
func panelOf(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`(?s)<(?:section|details) class="panel" id="` + id + `".*?</(?:section|details)>`).FindString(body)
	require.NotEmpty(t, m, "the page has the %s panel", id)
	return m
}

// rowNames are the names the rows of a panel link to under base ("topics"
// or "groups"), in order, unescaped.
func rowNames(t *testing.T, panel, base string) []string {
	t.Helper()
	var out []string
	for _, m := range regexp.MustCompile(`<tr><td><a href="`+regexp.QuoteMeta(prefix+base+"/")+`([^"/]*)">`).FindAllStringSubmatch(panel, -1) {
		name, err := url.PathUnescape(m[1])
		require.NoError(t, err)
		out = append(out, name)
	}
	return out
}

var nextRE = regexp.MustCompile(`<a rel="next" href="([^"]*)"`)

// nextLink is the panel's link to its next rows, or "" when it shows the
// last ones.
func nextLink(panel string) string {
	m := nextRE.FindStringSubmatch(panel)
	if m == nil {
		return ""
	}
	return strings.ReplaceAll(m[1], "&amp;", "&")
}

// walk follows a panel's next links from path and returns every name its
// rows list, page after page, and how many pages it took. No page shows
// more than shownRows rows.
func walk(t *testing.T, s *site, path, id, base string) (names []string, pages int) {
	t.Helper()
	for path != "" && pages < 1000 {
		pg := s.get(t, path)
		require.Equal(t, http.StatusOK, pg.status, "%s: %s", path, pg.body)
		panel := panelOf(t, pg.body, id)
		rows := rowNames(t, panel, base)
		require.LessOrEqual(t, len(rows), shownRows, "%s: rows of %s", path, id)
		names = append(names, rows...)
		pages++
		path = nextLink(panel)
		if path != "" {
			require.True(t, strings.HasPrefix(path, prefix), "%s links to its next rows under the prefix: %q", path, path)
		}
	}
	return names, pages
}

// TestOverview_BoundedPagesOfTopicsAndGroups: with 5,000 topics and more
// groups (and their retry topics) than a page shows, the overview shows
// at most shownRows rows of each table, the total counts, and a next link
// that reaches every row once, in name order; a name prefix filter,
// carried by the next links, narrows every table; a topic's page bounds
// its groups the same way.
func TestOverview_BoundedPagesOfTopicsAndGroups(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	const topics, groups = 5000, shownRows + 5
	var topicNames, groupNames, retryNames []string
	for i := range topics {
		name := fmt.Sprintf("topic-%05d", i)
		require.NoError(t, e.CreateTopic(ctx, name, 1))
		topicNames = append(topicNames, name)
	}
	for i := range groups {
		name := fmt.Sprintf("group-%03d", i)
		_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: name, Member: "m", Subscriptions: []equeue.Subscription{
			{Topic: "topic-00000"}, {Topic: equeue.RetryTopic(name), Filter: "*"}}})
		require.NoError(t, err)
		groupNames = append(groupNames, name)
		retryNames = append(retryNames, equeue.RetryTopic(name))
	}
	s := serve(t, e, console.Options{})

	first := s.get(t, prefix)
	require.Equal(t, http.StatusOK, first.status)
	assert.Contains(t, first.body, `<div class="k">Topics</div><div class="v">5,000</div>`, "the card counts every topic")
	assert.Contains(t, panelOf(t, first.body, "topics"), "of 5,000", "the table says how many topics there are")
	assert.Contains(t, panelOf(t, first.body, "groups"), fmt.Sprintf("of %d", groups))

	t.Run("every row once, page by page", func(t *testing.T) {
		names, pages := walk(t, s, prefix, "topics", "topics")
		assert.Equal(t, topicNames, names)
		assert.Equal(t, topics/shownRows, pages)
		names, pages = walk(t, s, prefix, "groups", "groups")
		assert.Equal(t, groupNames, names)
		assert.Equal(t, 2, pages)
		names, pages = walk(t, s, prefix, "internal", "topics")
		assert.Equal(t, retryNames, names)
		assert.Equal(t, 2, pages)
	})

	t.Run("a name prefix narrows every table", func(t *testing.T) {
		pg := s.get(t, prefix+"?q=topic-0012")
		require.Equal(t, http.StatusOK, pg.status, pg.body)
		assert.Equal(t, topicNames[120:130], rowNames(t, panelOf(t, pg.body, "topics"), "topics"))
		assert.Empty(t, rowNames(t, panelOf(t, pg.body, "groups"), "groups"))
		assert.Contains(t, pg.body, `value="topic-0012"`, "the filter box keeps the filter")

		pg = s.get(t, prefix+"?q=group-10")
		require.Equal(t, http.StatusOK, pg.status, pg.body)
		assert.Empty(t, rowNames(t, panelOf(t, pg.body, "topics"), "topics"))
		assert.Equal(t, groupNames[100:], rowNames(t, panelOf(t, pg.body, "groups"), "groups"))
		assert.Equal(t, retryNames[100:], rowNames(t, panelOf(t, pg.body, "internal"), "topics"), "an engine topic matches by its group's name")

		names, _ := walk(t, s, prefix+"?q=topic-01", "topics", "topics")
		assert.Equal(t, topicNames[1000:2000], names, "the next links keep the filter")
	})

	t.Run("a topic's page bounds its groups", func(t *testing.T) {
		names, pages := walk(t, s, prefix+"topics/topic-00000", "consumers", "groups")
		assert.Equal(t, groupNames, names)
		assert.Equal(t, 2, pages)
	})
}

// TestOverview_RowsPastTheEndAreAnEmptyPage: a next link followed after
// topics or groups were deleted (or a refresh of such a page) shows no
// rows and a way back to the first ones, not an error; so does a row
// number as large as an int holds.
func TestOverview_RowsPastTheEndAreAnEmptyPage(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "orders", 1))
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "billing", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "orders"}}})
	require.NoError(t, err)
	s := serve(t, e, console.Options{})
	for _, from := range []string{"500", "9223372036854775807"} {
		pg := s.get(t, prefix+"?tfrom="+from)
		require.Equal(t, http.StatusOK, pg.status, pg.body)
		panel := panelOf(t, pg.body, "topics")
		assert.Empty(t, rowNames(t, panel, "topics"), from)
		assert.Contains(t, panel, `href="`+prefix+`#topics"`, "%s: a link to the first rows", from)
		assert.Equal(t, []string{"billing"}, rowNames(t, panelOf(t, pg.body, "groups"), "groups"), "%s: the other tables are as they were", from)

		pg = s.get(t, prefix+"?gfrom="+from)
		require.Equal(t, http.StatusOK, pg.status, pg.body)
		assert.Empty(t, rowNames(t, panelOf(t, pg.body, "groups"), "groups"), from)
		pg = s.get(t, prefix+"topics/orders?gfrom="+from)
		require.Equal(t, http.StatusOK, pg.status, pg.body)
		assert.Empty(t, rowNames(t, panelOf(t, pg.body, "consumers"), "groups"), from)
	}
}

// TestOverviewAndTopicPages_NoCountLineWhenEveryRowShows: the overview's
// and a topic's tables show the row count only when rows are left out (a
// page, or a filter), as a group's page does.
func TestOverviewAndTopicPages_NoCountLineWhenEveryRowShows(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctx, "orders", 2))
	_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "billing", Member: "m",
		Subscriptions: []equeue.Subscription{{Topic: "orders"}}})
	require.NoError(t, err)
	s := serve(t, e, console.Options{})
	pages := []struct {
		path   string
		panels []string
	}{
		{prefix, []string{"topics", "groups"}},
		{prefix + "topics/orders", []string{"consumers"}},
	}
	for _, p := range pages {
		pg := s.get(t, p.path)
		require.Equal(t, http.StatusOK, pg.status, pg.body)
		for _, id := range p.panels {
			assert.NotContains(t, panelOf(t, pg.body, id), `class="pager`, "%s: %s", p.path, id)
		}
	}
	pg := s.get(t, prefix+"?q=x")
	require.Equal(t, http.StatusOK, pg.status, pg.body)
	for _, id := range []string{"topics", "groups"} {
		assert.Contains(t, panelOf(t, pg.body, id), `class="pager`, "%s: the filter left rows out", id)
	}
}
