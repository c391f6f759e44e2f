package console

import (
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
)

type overviewData struct {
	Topics        []topicRow
	Internal      []topicRow
	Groups        []groupRow
	Chart         chart
	TotalMessages int64
	TotalLag      int64
	StoreBytes    int64
	HasStore      bool
	Delayed       int
	DelayedMore   bool
	HasDelayed    bool
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
	d := overviewData{}
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
			d.Internal = append(d.Internal, row)
			continue
		}
		snap.in += max
		d.TotalMessages += row.Messages
		d.Topics = append(d.Topics, row)
	}
	for _, g := range groups {
		row := groupRow{Name: g.Name, Model: g.Model.String(), Members: len(g.Members), Lag: g.TotalLag()}
		names := make([]string, 0, len(g.Subscriptions))
		for _, s := range g.Subscriptions {
			if !isInternal(s.Topic) {
				names = append(names, s.Topic)
			}
		}
		row.Topics = strings.Join(names, ", ")
		for _, q := range g.Queues {
			if q.Committed > 0 && g.Model == equeue.Clustering && !isInternal(q.Topic) {
				snap.out += q.Committed
			}
		}
		d.TotalLag += row.Lag
		d.Groups = append(d.Groups, row)
	}
	perTopic := c.rates.observe(snap)
	for i := range d.Topics {
		d.Topics[i].InRate = perTopic[d.Topics[i].Name]
	}
	for i := range d.Internal {
		d.Internal[i].InRate = perTopic[d.Internal[i].Name]
	}
	d.TopicRows, d.GroupRows, d.InternalRows = c.topicRowsHTML(d.Topics, true), c.groupRowsHTML(d.Groups), c.topicRowsHTML(d.Internal, false)
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
