package console

import (
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
)

type overviewData struct {
	// Filter is the name prefix the tables' rows match (the q parameter).
	Filter string
	// FilterMax is the longest filter taken (maxFilterLen).
	FilterMax int
	// Each table's page of rows: user topics, groups, engine topics.
	TopicsPage, GroupsPage, InternalPage rowPage
	Chart                                chart
	TotalMessages                        int64
	TotalLag                             int64
	StoreBytes                           int64
	HasStore                             bool
	Delayed                              int
	DelayedMore                          bool
	HasDelayed                           bool
	// InternalOpen opens the engine topics' table: a visitor went to
	// other rows of it.
	InternalOpen bool
	// The tables' rows, rendered in Go (see rows.go).
	TopicRows, GroupRows, InternalRows template.HTML
}

func (overviewData) refresh() int { return 3 }

type topicRow struct {
	Name     string
	Queues   int
	Closed   int
	Messages int64
	InRate   float64
}

type groupRow struct {
	Name    string
	Model   string
	Members int
	Lag     int64
	Topics  string
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request, v viewer) {
	lq, err := parseListQuery(r.URL.Query(), filterParam, topicsFrom, groupsFrom, internalFrom)
	if err != nil {
		c.badInput(w, r, v, err.Error())
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	topics, err := c.b.Topics(ctx)
	if err != nil {
		c.brokerFail(w, r, v, "listing topics", err)
		return
	}
	groups, err := c.b.Groups(ctx)
	if err != nil {
		c.brokerFail(w, r, v, "listing groups", err)
		return
	}
	d := overviewData{Filter: lq.filter, FilterMax: maxFilterLen, InternalOpen: lq.from[internalFrom] > 0}
	// Every topic and group counts in the totals and the rates; only the
	// rows that match the filter are sorted, and only a page of them is
	// rendered.
	var users, internal []topicRow
	nUsers, nInternal := 0, 0
	snap := snapshot{at: time.Now(), topics: make(map[string]int64, len(topics))}
	for _, t := range topics {
		row := topicRow{Name: t.Name, Queues: len(t.Queues)}
		var max int64
		for _, q := range t.Queues {
			row.Messages += q.Messages
			max += q.MaxOffset
			if !q.Writable {
				row.Closed++
			}
		}
		snap.topics[t.Name] = max
		if isInternal(t.Name) {
			nInternal++
			if matches(t.Name, lq.filter) {
				internal = append(internal, row)
			}
			continue
		}
		snap.in += max
		d.TotalMessages += row.Messages
		nUsers++
		if matches(t.Name, lq.filter) {
			users = append(users, row)
		}
	}
	var shownGroups []equeue.GroupInfo
	for _, g := range groups {
		for _, q := range g.Queues {
			if q.Committed > 0 && g.Model == equeue.Clustering && !isInternal(q.Topic) {
				snap.out += q.Committed
			}
		}
		d.TotalLag += g.TotalLag()
		if matches(g.Name, lq.filter) {
			shownGroups = append(shownGroups, g)
		}
	}
	topicName := func(t topicRow) string { return t.Name }
	link := func(k, fragment string) func(int) string {
		return func(from int) string { return lq.link(c.prefix, "", k, from, fragment) }
	}
	users, d.TopicsPage = pageRows(users, topicName, lq.from[topicsFrom], nUsers, lq.filter, link(topicsFrom, "topics"))
	internal, d.InternalPage = pageRows(internal, topicName, lq.from[internalFrom], nInternal, lq.filter, link(internalFrom, "internal"))
	shownGroups, d.GroupsPage = pageRows(shownGroups, func(g equeue.GroupInfo) string { return g.Name }, lq.from[groupsFrom], len(groups), lq.filter, link(groupsFrom, "groups"))
	rows := make([]groupRow, 0, len(shownGroups))
	for _, g := range shownGroups {
		row := groupRow{Name: g.Name, Model: g.Model.String(), Members: len(g.Members), Lag: g.TotalLag()}
		names := make([]string, 0, len(g.Subscriptions))
		for _, s := range g.Subscriptions {
			if !isInternal(s.Topic) {
				names = append(names, s.Topic)
			}
		}
		row.Topics = strings.Join(names, ", ")
		rows = append(rows, row)
	}
	shown := make([]string, 0, len(users)+len(internal))
	for _, t := range slices.Concat(users, internal) {
		shown = append(shown, t.Name)
	}
	perTopic := c.rates.observe(snap, shown)
	for i := range users {
		users[i].InRate = perTopic[users[i].Name]
	}
	for i := range internal {
		internal[i].InRate = perTopic[internal[i].Name]
	}
	d.TopicRows, d.GroupRows, d.InternalRows = c.topicRowsHTML(users, true), c.groupRowsHTML(rows), c.topicRowsHTML(internal, false)
	d.Chart = c.rates.chart()
	switch s := c.b.(type) {
	case statser:
		d.StoreBytes, d.HasStore = s.Stats().StoreBytes, true
	case remoteStatser:
		if st, err := s.EngineStats(ctx); err == nil {
			d.StoreBytes, d.HasStore = st.StoreBytes, true
		}
	}
	if dl, ok := c.b.(delayedLister); ok {
		if info, err := dl.Delayed(ctx, 1); err == nil {
			d.Delayed, d.DelayedMore, d.HasDelayed = info.Pending, !info.Complete, true
		}
	}
	c.render(w, r, v, http.StatusOK, "overview", "Overview", d)
}
