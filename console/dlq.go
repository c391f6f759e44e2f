package console

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/equeue-go/equeue"
)

type dlqData struct {
	Group            string
	Entries          []dlqRow
	Min, Max         int64
	From, Next, Prev int64
	HasNext, HasPrev bool
	Count            int
	Pending          int
}

type dlqRow struct {
	equeue.DLQEntry
	Preview string
	// TooLarge marks a dead letter the broker could not answer (see
	// readDeadLetters): only its Offset is known, and Message is nil.
	TooLarge bool
}

// readDeadLetters lists up to n dead letters of group from offset from. A
// dead letter larger than what the broker may answer (a remote client's
// MaxMessageBytes) fails the listing that reaches it, naming its offset:
// it comes back alone, as a row with only that offset and TooLarge set,
// so that a page lists past it and it can still be redriven by offset.
func (c *Console) readDeadLetters(ctx context.Context, group string, from int64, n int) ([]dlqRow, error) {
	es, err := c.b.DeadLetters(ctx, group, from, n)
	var big *equeue.MessageTooLargeError
	if errors.As(err, &big) && big.Offset >= from {
		return []dlqRow{{DLQEntry: equeue.DLQEntry{Offset: big.Offset}, TooLarge: true}}, nil
	}
	if err != nil {
		return nil, err
	}
	rows := make([]dlqRow, len(es))
	for i, e := range es {
		row := listed(e.Message)
		e.Message = row.M
		rows[i] = dlqRow{DLQEntry: e, Preview: row.Preview}
	}
	return rows, nil
}

func (c *Console) dlqPage(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	group := r.PathValue("group")
	if _, err := c.b.Group(ctx, group); err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("group %q", group), err)
		return
	}
	d := dlqData{Group: group, Count: defaultPageSize}
	qv := r.URL.Query()
	if s := qv.Get("count"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageSize {
			c.badInput(w, r, v, fmt.Sprintf("The page size must be a number from 1 to %d (got %q).", maxPageSize, s))
			return
		}
		d.Count = n
	}
	t, err := c.b.Topic(ctx, equeue.DLQTopic(group))
	if errors.Is(err, equeue.ErrTopicNotFound) || (err == nil && len(t.Queues) == 0) {
		c.render(w, r, v, http.StatusOK, "dlq", "Dead letters of "+group, d)
		return
	}
	if err != nil {
		c.brokerFail(w, r, v, "dead letters of "+group, err)
		return
	}
	d.Min, d.Max = t.Queues[0].MinOffset, t.Queues[0].MaxOffset
	d.From = d.Min
	if s := qv.Get("from"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < d.Min || n > d.Max {
			c.badInput(w, r, v, fmt.Sprintf("Offset %q is outside the dead letters' range %d to %d.", s, d.Min, d.Max))
			return
		}
		d.From = n
	}
	off := d.From
	for len(d.Entries) < d.Count && off < d.Max {
		rows, err := c.readDeadLetters(ctx, group, off, min(d.Count-len(d.Entries), 1024))
		if err != nil {
			c.brokerFail(w, r, v, "dead letters of "+group, err)
			return
		}
		if len(rows) == 0 {
			break
		}
		for _, row := range rows {
			d.Entries = append(d.Entries, row)
			if !row.Redriven && !row.TooLarge {
				d.Pending++
			}
		}
		off = rows[len(rows)-1].Offset + 1
	}
	d.Next, d.HasNext = off, off < d.Max
	d.Prev, d.HasPrev = max(d.Min, d.From-int64(d.Count)), d.From > d.Min
	c.render(w, r, v, http.StatusOK, "dlq", "Dead letters of "+group, d)
}

// maxRedriveRate bounds the rate field (messages per second).
const maxRedriveRate = 100_000

func (c *Console) redrive(w http.ResponseWriter, r *http.Request, v viewer) {
	group := r.PathValue("group")
	if err := r.ParseForm(); err != nil {
		c.badInput(w, r, v, "The form could not be read: "+err.Error())
		return
	}
	all := r.PostFormValue("all") == "1"
	toTopic := r.PostFormValue("to_topic") == "1"
	var offsets []int64
	for _, s := range r.PostForm["offset"] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 || n == math.MaxInt64 { // no dead letter has the largest offset: none is past it
			c.badInput(w, r, v, fmt.Sprintf("%q is not a dead-letter offset.", s))
			return
		}
		offsets = append(offsets, n)
	}
	if !all && len(offsets) == 0 {
		c.badInput(w, r, v, "Select at least one dead letter, or redrive all.")
		return
	}
	rate := 0.0
	if s := r.PostFormValue("rate"); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		// NaN fails both bounds; a rate so small that its interval
		// overflows a Duration is refused too.
		if err != nil || !(f >= 0 && f <= maxRedriveRate) || (f > 0 && float64(time.Second)/f >= math.MaxInt64) {
			c.badInput(w, r, v, fmt.Sprintf("The rate must be a number of messages per second from 0 (no limit) to %d.", maxRedriveRate))
			return
		}
		rate = f
	}
	back := c.prefix + "groups/" + url.PathEscape(group) + "/dlq"
	if r.PostFormValue("confirm") != "1" {
		d := confirmData{Action: r.URL.EscapedPath(), Button: "Redrive", Cancel: back, Fields: []field{{"rate", r.PostFormValue("rate")}}}
		if all {
			d.Heading = "Redrive every dead letter of " + group + "?"
			d.Fields = append(d.Fields, field{"all", "1"})
		} else {
			d.Heading = fmt.Sprintf("Redrive %d dead letter(s) of %s?", len(offsets), group)
			for _, o := range offsets {
				d.Fields = append(d.Fields, field{"offset", strconv.FormatInt(o, 10)})
				d.Items = append(d.Items, "dead letter at offset "+strconv.FormatInt(o, 10))
			}
		}
		d.Detail = "Each message is sent back to the group's retry topic, due at once, where only this group gets it again, with fresh attempts, and marked redriven, so it is never sent twice."
		if toTopic {
			d.Fields = append(d.Fields, field{"to_topic", "1"})
			d.Detail = "Each message is sent back to its original topic as a fresh message, for every group subscribed there, and marked redriven, so it is never sent twice."
		}
		if rate > 0 {
			d.Detail += fmt.Sprintf(" At most %g per second: this page waits until they are sent.", rate)
		}
		c.confirm(w, r, v, d)
		return
	}
	n, err := c.doRedrive(r.Context(), group, all, offsets, toTopic, rate)
	if err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("redriving dead letters of %s (%d sent before the failure)", group, n), err)
		return
	}
	c.done(w, r, back, "redrive:"+strconv.Itoa(n))
}

// doRedrive redrives in one call (or one a run of consecutive offsets,
// redriveRuns), or one message at a time at the rate; toTopic sends them
// to their topics rather than the group's retry topic. The selected
// offsets go as ranges, never named one by one: a dead letter listed
// redriven through a lost mark is passed by, as All passes it. A range
// (or, at a rate, a dead letter) whose topics are gone does not stop the
// ones after it (goneTopics).
func (c *Console) doRedrive(ctx context.Context, group string, all bool, offsets []int64, toTopic bool, rate float64) (int, error) {
	call := func(req equeue.RedriveRequest) (int, error) {
		cctx, cancel := context.WithTimeout(ctx, c.o.RequestTimeout)
		defer cancel()
		req.ToTopic = toTopic
		return c.b.Redrive(cctx, group, req)
	}
	if rate == 0 {
		if all {
			return call(equeue.RedriveRequest{All: true})
		}
		// As one Redrive does, the ranges go on past dead letters whose
		// topics are gone, and the first such error is told at the end.
		sent := 0
		var gone goneTopics
		for _, run := range redriveRuns(offsets) {
			n, err := call(run)
			sent += n
			if !gone.add(err) {
				return sent, errors.Join(err, gone.err("selected ranges"))
			}
		}
		return sent, gone.err("selected ranges")
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	sent := 0
	one := func(req equeue.RedriveRequest) error {
		if sent > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		n, err := call(req)
		sent += n
		return err
	}
	// As without a rate, the dead letters go on past those whose topics
	// are gone, and the first such error is told at the end.
	var gone goneTopics
	if !all {
		for _, off := range slices.Compact(slices.Sorted(slices.Values(offsets))) {
			if err := one(equeue.RedriveRequest{From: off, To: off + 1}); !gone.add(err) {
				return sent, errors.Join(err, gone.err("dead letters"))
			}
		}
		return sent, gone.err("dead letters")
	}
	var from int64
	for {
		lctx, cancel := context.WithTimeout(ctx, c.o.RequestTimeout)
		rows, err := c.readDeadLetters(lctx, group, from, 256)
		cancel()
		if err != nil {
			return sent, errors.Join(err, gone.err("dead letters"))
		}
		if len(rows) == 0 {
			return sent, gone.err("dead letters")
		}
		for _, row := range rows {
			// One too large to list may be redriven already: the broker
			// skips it then, and counts it not. Each goes as a range of
			// one, as All would send it: a dead letter named by its
			// offset is sent back though its redriven mark was lost.
			if row.Redriven {
				continue
			}
			if err := one(equeue.RedriveRequest{From: row.Offset, To: row.Offset + 1}); !gone.add(err) {
				return sent, errors.Join(err, gone.err("dead letters"))
			}
		}
		from = rows[len(rows)-1].Offset + 1
	}
}

type retryData struct {
	Group    string
	Messages []retryRow
	Pending  int64
	Shown    int64
}

type retryRow struct {
	M         *equeue.Message
	Origin    string
	OriginQ   string
	OriginOff string
	LastError string
	Preview   string
	// TooLarge marks a message too large to read (see messageRow).
	TooLarge bool
}

func (retryData) refresh() int { return 5 }

// maxRetryShown bounds the retry page's list.
const maxRetryShown = 200

func (c *Console) retryPage(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	group := r.PathValue("group")
	g, err := c.b.Group(ctx, group)
	if err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("group %q", group), err)
		return
	}
	d := retryData{Group: group}
	rt := equeue.RetryTopic(group)
	t, err := c.b.Topic(ctx, rt)
	if errors.Is(err, equeue.ErrTopicNotFound) {
		c.render(w, r, v, http.StatusOK, "retry", "Retries of "+group, d)
		return
	}
	if err != nil {
		c.brokerFail(w, r, v, "retries of "+group, err)
		return
	}
	// Where the group stands in each retry queue: a broadcasting group has
	// a row per member there, and its slowest member counts, as in the
	// group's lag (GroupInfo.QueueLags). A row with no committed offset
	// yet stands at the queue's first stored message.
	committed := map[int]int64{}
	for _, q := range g.Queues {
		if q.Topic != rt {
			continue
		}
		off := max(q.Committed, 0)
		if prev, ok := committed[q.Queue]; ok {
			off = min(prev, off)
		}
		committed[q.Queue] = off
	}
	for _, q := range t.Queues {
		from := q.MinOffset
		if off, ok := committed[q.ID]; ok {
			from = max(from, off)
		}
		d.Pending += max(0, q.MaxOffset-from)
		if len(d.Messages) >= maxRetryShown {
			continue
		}
		rows, err := c.readRange(ctx, rt, q, from, maxRetryShown-len(d.Messages))
		if err != nil {
			c.brokerFail(w, r, v, "reading retries of "+group, err)
			return
		}
		for _, row := range rows {
			m := row.M
			if row.TooLarge {
				d.Messages = append(d.Messages, retryRow{M: m, TooLarge: true})
				continue
			}
			d.Messages = append(d.Messages, retryRow{M: m, Origin: m.SysProperty(equeue.SysOriginTopic), OriginQ: m.SysProperty(equeue.SysOriginQueue),
				OriginOff: m.SysProperty(equeue.SysOriginOffset), LastError: m.SysProperty(equeue.SysLastError), Preview: row.Preview})
		}
	}
	d.Shown = int64(len(d.Messages))
	c.render(w, r, v, http.StatusOK, "retry", "Retries of "+group, d)
}
