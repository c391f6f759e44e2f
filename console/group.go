package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/equeue-go/equeue"
)

type groupData struct {
	G        equeue.GroupInfo
	Lag      int64
	Internal []equeue.GroupQueueInfo
	// Filter is the name prefix the tables' rows match (the q parameter):
	// a progress row by its topic, a member by its ID.
	Filter string
	// FilterMax is the longest filter taken (maxFilterLen).
	FilterMax int
	// QueuesPage is what QueueRows show of the group's rows on its
	// topics' queues: a broadcasting group has one per member and queue.
	QueuesPage rowPage
	// QueueRows are the page of those rows, rendered in Go (see rows.go).
	QueueRows template.HTML
	// Members are the page of the group's members shown; MembersPage is
	// what they are of them all.
	Members     []memberRow
	MembersPage rowPage
	// QueueCount is how many queues the group is on (user topics'), each
	// counted once.
	QueueCount int
	// ShownRefs are the queues of the progress rows shown, each once, in
	// their order: the queues the reset form offers, so that it stays
	// within a page of rows as the tables do.
	ShownRefs []equeue.QueueRef
	// Subs are the group's subscriptions to user topics, "topic (filter)".
	Subs []string
}

// memberRow is a row of the group page's members table.
type memberRow struct {
	// ID is the member's ID.
	ID string
	// Queues are the first shownRows of the queues granted to it; More
	// counts the others.
	Queues []equeue.QueueRef
	More   int
}

// groupQueueRow is a row of the group page's progress table.
type groupQueueRow struct {
	equeue.GroupQueueInfo
	// Next is where its "next message" link browses from: the committed
	// offset, or the queue's first stored offset when retention deleted
	// the messages from the committed offset on.
	Next int64
}

func (groupData) refresh() int { return 5 }

// groupTopicCalls is how many of a group's topics its page describes one
// Topic call each; a group on more is read with one Topics listing, so
// that a page's broker calls do not grow with the group's topics.
const groupTopicCalls = 8

func (c *Console) groupPage(w http.ResponseWriter, r *http.Request, v viewer) {
	lq, err := parseListQuery(r.URL.Query(), filterParam, progressFrom, membersFrom)
	if err != nil {
		c.badInput(w, r, v, err.Error())
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	name := r.PathValue("group")
	g, err := c.b.Group(ctx, name)
	if err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("group %q", name), err)
		return
	}
	d := groupData{G: g, Lag: g.TotalLag(), Filter: lq.filter, FilterMax: maxFilterLen}
	link := func(k, fragment string) func(int) string {
		return func(from int) string { return lq.link(c.prefix, "groups/"+url.PathEscape(name), k, from, fragment) }
	}
	// Only the rows that match the filter are sorted, and only a page of
	// them is rendered (and has its queue's first offset read).
	var queues []groupQueueRow
	nQueues := 0
	for _, q := range g.Queues {
		if isInternal(q.Topic) {
			d.Internal = append(d.Internal, q)
			continue
		}
		nQueues++
		if matches(q.Topic, lq.filter) {
			queues = append(queues, groupQueueRow{GroupQueueInfo: q})
		}
	}
	queues, d.QueuesPage = pageRowsFunc(queues, compareQueueRows, lq.from[progressFrom], nQueues, lq.filter, link(progressFrom, "progress"))
	firsts, what, err := c.firstOffsets(ctx, queues)
	if err != nil {
		c.brokerFail(w, r, v, what, err)
		return
	}
	for i := range queues {
		queues[i].Next = max(queues[i].Committed, firsts[queues[i].QueueRef])
	}
	d.QueueRows = c.groupQueueRowsHTML(queues)
	for i, q := range queues {
		// A broadcasting group's rows of a queue (one per member) are
		// next to each other: sorted by topic, queue, then owner.
		if i == 0 || q.QueueRef != queues[i-1].QueueRef {
			d.ShownRefs = append(d.ShownRefs, q.QueueRef)
		}
	}
	var members []equeue.MemberInfo
	for _, m := range g.Members {
		if lq.filter == "" || strings.HasPrefix(m.ID, lq.filter) {
			members = append(members, m)
		}
	}
	members, d.MembersPage = pageRows(members, func(m equeue.MemberInfo) string { return m.ID }, lq.from[membersFrom], len(g.Members), lq.filter, link(membersFrom, "members"))
	for _, m := range members {
		row := memberRow{ID: m.ID, Queues: m.Queues}
		if len(row.Queues) > shownRows {
			row.Queues, row.More = row.Queues[:shownRows], len(row.Queues)-shownRows
		}
		d.Members = append(d.Members, row)
	}
	for _, q := range g.QueueLags() {
		if !isInternal(q.Topic) {
			d.QueueCount++
		}
	}
	for _, s := range g.Subscriptions {
		if isInternal(s.Topic) {
			continue
		}
		d.Subs = append(d.Subs, fmt.Sprintf("%s (%s)", s.Topic, s.Filter))
	}
	c.render(w, r, v, http.StatusOK, "group", "Group "+name, d)
}

// compareQueueRows orders a group's progress rows by topic, then queue
// number, then owner (a broadcasting group has a row per member).
func compareQueueRows(a, b groupQueueRow) int {
	return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Owner, b.Owner))
}

// firstOffsets returns the first stored offset of the queues of rows; a
// topic deleted since has none. Rows on up to groupTopicCalls topics have
// each described, more are read from one Topics listing. On failure, what
// names the call that failed.
func (c *Console) firstOffsets(ctx context.Context, rows []groupQueueRow) (firsts map[equeue.QueueRef]int64, what string, err error) {
	var names []string
	want := map[string]bool{}
	for _, q := range rows {
		if !want[q.Topic] {
			want[q.Topic] = true
			names = append(names, q.Topic)
		}
	}
	firsts = map[equeue.QueueRef]int64{}
	add := func(t equeue.TopicInfo) {
		for _, tq := range t.Queues {
			firsts[equeue.QueueRef{Topic: t.Name, Queue: tq.ID}] = tq.MinOffset
		}
	}
	if len(names) > groupTopicCalls {
		all, err := c.b.Topics(ctx)
		if err != nil {
			return nil, "listing topics", err
		}
		for _, t := range all {
			if want[t.Name] {
				add(t)
			}
		}
		return firsts, "", nil
	}
	for _, name := range names {
		t, err := c.b.Topic(ctx, name)
		if errors.Is(err, equeue.ErrTopicNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Sprintf("topic %q", name), err
		}
		add(t)
	}
	return firsts, "", nil
}

func (c *Console) resetOffsets(w http.ResponseWriter, r *http.Request, v viewer) {
	name := r.PathValue("group")
	ctx, cancel := c.ctx(r)
	defer cancel()
	g, err := c.b.Group(ctx, name)
	if err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("group %q", name), err)
		return
	}
	req := equeue.ResetRequest{}
	to := r.PostFormValue("to")
	fields := []field{{"to", to}}
	var what string
	switch to {
	case "earliest":
		req.To, what = equeue.ResetToEarliest, "to the oldest stored message of every queue: stored messages are delivered again"
	case "latest":
		req.To, what = equeue.ResetToLatest, fmt.Sprintf("to the end of every queue: %s pending message(s) will be skipped", formatNum(g.TotalLag()))
	case "time":
		at, ok := parseTime(strings.TrimSpace(r.PostFormValue("time")))
		if !ok {
			c.badInput(w, r, v, fmt.Sprintf("%q is not a time: use 2006-01-02T15:04:05Z or 2006-01-02 15:04 (UTC).", r.PostFormValue("time")))
			return
		}
		req.To, req.Time = equeue.ResetToTime, at
		what = "to the first message stored at or after " + when(at) + " in every queue"
		fields = append(fields, field{"time", r.PostFormValue("time")})
	case "offset":
		ref, off, err := parseQueueOffset(r.PostFormValue("queue"), r.PostFormValue("offset"))
		if err != nil {
			c.badInput(w, r, v, err.Error())
			return
		}
		known := false
		for _, q := range g.Queues {
			if q.QueueRef == ref {
				known = true
				if off > q.MaxOffset {
					c.badInput(w, r, v, fmt.Sprintf("Offset %d is past the end of %s (%d).", off, ref, q.MaxOffset))
					return
				}
			}
		}
		if !known {
			c.badInput(w, r, v, fmt.Sprintf("Group %s does not consume %s.", name, ref))
			return
		}
		req.To, req.Offsets = equeue.ResetToOffsets, map[equeue.QueueRef]int64{ref: off}
		what = fmt.Sprintf("on %s to offset %d", ref, off)
		fields = append(fields, field{"queue", r.PostFormValue("queue")}, field{"offset", r.PostFormValue("offset")})
	default:
		c.badInput(w, r, v, "Choose where to reset to: earliest, latest, time or offset.")
		return
	}
	back := c.prefix + "groups/" + url.PathEscape(name)
	if r.PostFormValue("confirm") != "1" {
		c.confirm(w, r, v, confirmData{
			Heading: "Reset the offsets of group " + name + "?",
			Detail:  "Move the group " + what + ". Live members restart from the new offsets at once.",
			Action:  r.URL.EscapedPath(), Button: "Reset offsets", Cancel: back, Fields: fields,
		})
		return
	}
	if err := c.b.ResetOffsets(ctx, name, req); err != nil {
		c.brokerFail(w, r, v, "resetting offsets of "+name, err)
		return
	}
	c.done(w, r, back, "reset")
}

// parseQueueOffset reads "topic/queue" and an offset.
func parseQueueOffset(queue, offset string) (equeue.QueueRef, int64, error) {
	i := strings.LastIndexByte(queue, '/')
	if i <= 0 {
		return equeue.QueueRef{}, 0, fmt.Errorf("%q does not name a queue (topic/queue)", queue)
	}
	qn, err := strconv.Atoi(queue[i+1:])
	if err != nil || qn < 0 {
		return equeue.QueueRef{}, 0, fmt.Errorf("%q does not name a queue (topic/queue)", queue)
	}
	off, err := strconv.ParseInt(strings.TrimSpace(offset), 10, 64)
	if err != nil || off < 0 {
		return equeue.QueueRef{}, 0, fmt.Errorf("%q is not an offset", offset)
	}
	return equeue.QueueRef{Topic: queue[:i], Queue: qn}, off, nil
}
