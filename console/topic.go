package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/equeue-go/equeue"
)

type topicData struct {
	// Topic is the topic shown.
	Topic equeue.TopicInfo
	// Groups are the page of the groups consuming it that is shown.
	Groups []topicGroup
	// GroupsPage is what Groups are of them all.
	GroupsPage rowPage
	// Total counts the messages the topic stores.
	Total int64
}

func (topicData) refresh() int { return 5 }

type topicGroup struct {
	Name string
	Lag  int64
}

func (c *Console) topicPage(w http.ResponseWriter, r *http.Request, v viewer) {
	lq, err := parseListQuery(r.URL.Query(), groupsFrom)
	if err != nil {
		c.badInput(w, r, v, err.Error())
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	name := r.PathValue("topic")
	t, err := c.b.Topic(ctx, name)
	if err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("topic %q", name), err)
		return
	}
	groups, err := c.b.Groups(ctx)
	if err != nil {
		c.brokerFail(w, r, v, "listing groups", err)
		return
	}
	d := topicData{Topic: t, Total: t.Messages}
	for _, g := range groups {
		tg := topicGroup{Name: g.Name}
		found := false
		for _, q := range g.QueueLags() {
			if q.Topic == name {
				found = true
				tg.Lag += q.Lag
			}
		}
		if found {
			d.Groups = append(d.Groups, tg)
		}
	}
	link := func(from int) string {
		return lq.link(c.prefix, "topics/"+url.PathEscape(name), groupsFrom, from, "consumers")
	}
	d.Groups, d.GroupsPage = pageRows(d.Groups, func(g topicGroup) string { return g.Name }, lq.from[groupsFrom], len(d.Groups), "", link)
	c.render(w, r, v, http.StatusOK, "topic", "Topic "+name, d)
}

func (c *Console) addQueues(w http.ResponseWriter, r *http.Request, v viewer) {
	name := r.PathValue("topic")
	n, err := strconv.Atoi(r.PostFormValue("count"))
	if err != nil || n < 1 || n > 256 {
		c.badInput(w, r, v, "The number of queues to add must be between 1 and 256.")
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	if err := c.b.AddQueues(ctx, name, n); err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("adding %d queues to %q", n, name), err)
		return
	}
	c.done(w, r, c.prefix+"topics/"+url.PathEscape(name), "queues")
}

func (c *Console) setWritable(w http.ResponseWriter, r *http.Request, v viewer) {
	name := r.PathValue("topic")
	q, err := strconv.Atoi(r.PathValue("queue"))
	if err != nil || q < 0 {
		c.badInput(w, r, v, fmt.Sprintf("%q is not a queue number.", r.PathValue("queue")))
		return
	}
	writable, err := strconv.ParseBool(r.PostFormValue("writable"))
	if err != nil {
		c.badInput(w, r, v, "writable must be true or false.")
		return
	}
	back := c.prefix + "topics/" + url.PathEscape(name)
	if !writable && r.PostFormValue("confirm") != "1" {
		c.confirm(w, r, v, confirmData{
			Heading: fmt.Sprintf("Close queue %d of %s to producers?", q, name),
			Detail:  "Producers stop sending to this queue; consumers still receive what it holds. You can open it again.",
			Action:  r.URL.EscapedPath(), Button: "Close queue", Cancel: back,
			Fields: []field{{"writable", "false"}},
		})
		return
	}
	ctx, cancel := c.ctx(r)
	defer cancel()
	if err := c.b.SetQueueWritable(ctx, name, q, writable); err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("changing queue %d of %q", q, name), err)
		return
	}
	done := "opened"
	if !writable {
		done = "closed"
	}
	c.done(w, r, back, done)
}

// done redirects after a successful action (post/redirect/get).
func (c *Console) done(w http.ResponseWriter, r *http.Request, to, what string) {
	http.Redirect(w, r, to+"?done="+url.QueryEscape(what), http.StatusSeeOther)
}

// confirmData is a confirmation page: the same POST again with confirm=1.
// Action is the request's escaped path: unescaped, the path of an engine
// topic ("%RETRY%cafe") would read as other escapes ("%ca").
type confirmData struct {
	Heading string
	Detail  string
	Items   []string
	Action  string
	Button  string
	Cancel  string
	Fields  []field
	Danger  bool
}

type field struct{ Name, Value string }

func (c *Console) confirm(w http.ResponseWriter, r *http.Request, v viewer, d confirmData) {
	d.Danger = true
	c.render(w, r, v, http.StatusOK, "confirm", "Confirm", d)
}
