package console

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/equeue-go/equeue"
)

type messagesData struct {
	Topic    equeue.TopicInfo
	Queue    equeue.QueueInfo
	Mode     string // offset, time, key, id
	Query    browseQuery
	Messages []messageRow
	// Paging (offset mode).
	From, Next, Prev int64
	HasNext, HasPrev bool
	// Search report (key and id modes).
	Scanned  []scanReport
	Complete bool
	Limit    int
	// Found counts the matches (key and id modes); TooLarge the rows of
	// messages too large to read (see messageRow), which a search could
	// not look at.
	Found, TooLarge int
}

type browseQuery struct {
	Queue int
	From  string
	Count int
	At    string
	Key   string
	ID    string
}

type messageRow struct {
	M        *equeue.Message // its Body is only the head of the body (listed)
	Preview  string
	Size     int // the whole body's length
	Consumed int
	Groups   int
	// TooLarge marks a message the broker could not answer within the
	// client's receive limit (pullList): M holds only its topic, queue
	// and offset.
	TooLarge bool
}

// groupProgress is one group's (or broadcast member's) position in a queue.
type groupProgress struct {
	Group     string
	Member    string
	Committed int64
}

func (c *Console) messagesPage(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	name := r.PathValue("topic")
	t, err := c.b.Topic(ctx, name)
	if err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("topic %q", name), err)
		return
	}
	qv := r.URL.Query()
	bq := browseQuery{From: qv.Get("from"), At: strings.TrimSpace(qv.Get("at")), Key: qv.Get("key"), ID: strings.TrimSpace(qv.Get("id")), Count: defaultPageSize}
	if s := qv.Get("count"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageSize {
			c.badInput(w, r, v, fmt.Sprintf("The page size must be a number from 1 to %d (got %q).", maxPageSize, s))
			return
		}
		bq.Count = n
	}
	if s := qv.Get("queue"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			c.badInput(w, r, v, fmt.Sprintf("%q is not a queue number.", s))
			return
		}
		bq.Queue = n
	}
	d := messagesData{Topic: t, Query: bq, Mode: "offset", Limit: c.o.ScanLimit}
	qi := slices.IndexFunc(t.Queues, func(q equeue.QueueInfo) bool { return q.ID == bq.Queue })
	if qi < 0 {
		c.fail(w, r, v, http.StatusNotFound, "Queue not found", fmt.Sprintf("Topic %s has no queue %d (it has %d).", name, bq.Queue, len(t.Queues)))
		return
	}
	d.Queue = t.Queues[qi]
	progress, err := c.progress(ctx, name)
	if err != nil {
		c.brokerFail(w, r, v, "listing groups", err)
		return
	}
	var rows []messageRow
	switch {
	case bq.ID != "" || bq.Key != "":
		d.Mode = "id"
		match := func(m *equeue.Message) bool { return m.ID == bq.ID }
		if bq.ID == "" {
			d.Mode = "key"
			match = func(m *equeue.Message) bool { return slices.Contains(m.Keys, bq.Key) }
		}
		rows, d.Scanned, d.Complete, err = c.search(ctx, t, match)
		if err != nil {
			c.brokerFail(w, r, v, "searching", err)
			return
		}
	default:
		q := d.Queue
		from := max(q.MinOffset, q.MaxOffset-int64(bq.Count))
		if bq.At != "" {
			at, ok := parseTime(bq.At)
			if !ok {
				c.badInput(w, r, v, fmt.Sprintf("%q is not a time: use 2006-01-02T15:04:05Z (RFC 3339) or 2006-01-02 15:04 (UTC).", bq.At))
				return
			}
			d.Mode = "time"
			if from, err = c.offsetAt(ctx, name, q, at); err != nil {
				c.brokerFail(w, r, v, "finding the offset for a time", err)
				return
			}
		} else if bq.From != "" {
			n, err := strconv.ParseInt(bq.From, 10, 64)
			if err != nil {
				c.badInput(w, r, v, fmt.Sprintf("%q is not an offset.", bq.From))
				return
			}
			if n < q.MinOffset || n > q.MaxOffset {
				c.badInput(w, r, v, fmt.Sprintf("Offset %d is outside queue %d's stored range %d to %d.", n, q.ID, q.MinOffset, q.MaxOffset))
				return
			}
			from = n
		}
		if rows, err = c.readRange(ctx, name, q, from, bq.Count); err != nil {
			c.brokerFail(w, r, v, "reading messages", err)
			return
		}
		d.From = from
		d.Prev, d.HasPrev = max(q.MinOffset, from-int64(bq.Count)), from > q.MinOffset
		d.Next = from + int64(bq.Count)
		if len(rows) > 0 {
			d.Next = rows[len(rows)-1].M.Offset + 1
		}
		d.HasNext = d.Next < q.MaxOffset
		slices.Reverse(rows) // newest first
	}
	for _, row := range rows {
		m := row.M
		for _, p := range progress[equeue.QueueRef{Topic: m.Topic, Queue: m.Queue}] {
			row.Groups++
			if p.Committed > m.Offset {
				row.Consumed++
			}
		}
		if row.TooLarge {
			d.TooLarge++
		} else {
			d.Found++
		}
		d.Messages = append(d.Messages, row)
	}
	c.render(w, r, v, http.StatusOK, "messages", "Messages of "+name, d)
}

// readRange lists up to n messages of a queue from an offset, as rows
// that keep only the head of each body (listed).
func (c *Console) readRange(ctx context.Context, topic string, q equeue.QueueInfo, from int64, n int) ([]messageRow, error) {
	var out []messageRow
	off := from
	for len(out) < n && off < q.MaxOffset {
		res, err := c.pullList(ctx, equeue.PullRequest{Topic: topic, Queue: q.ID, Offset: off, Max: n - len(out)})
		if err != nil {
			return nil, err
		}
		for _, m := range res.Messages {
			out = append(out, listed(m))
		}
		if res.TooLarge >= 0 && res.TooLarge < q.MaxOffset {
			out = append(out, tooLargeRow(topic, q.ID, res.TooLarge))
		}
		if res.NextOffset <= off {
			break
		}
		off = res.NextOffset
	}
	return out, nil
}

// progress maps each queue of a topic to every group's position in it.
func (c *Console) progress(ctx context.Context, topic string) (map[equeue.QueueRef][]groupProgress, error) {
	groups, err := c.b.Groups(ctx)
	if err != nil {
		return nil, err
	}
	out := map[equeue.QueueRef][]groupProgress{}
	for _, g := range groups {
		for _, q := range g.Queues {
			if q.Topic != topic {
				continue
			}
			member := ""
			if g.Model == equeue.Broadcasting {
				member = q.Owner
			}
			out[q.QueueRef] = append(out[q.QueueRef], groupProgress{Group: g.Name, Member: member, Committed: q.Committed})
		}
	}
	return out, nil
}

type messageData struct {
	M        *equeue.Message
	View     string
	Body     string
	Views    []string
	Size     int
	Cut      bool
	Progress []groupProgress
	Props    []field
	// TooLarge, when set, says that the broker cannot answer the message
	// within the client's receive limit: M holds only where it is.
	TooLarge *tooLargeInfo
}

// maxShownBody is how much of a body's view the message page shows.
const maxShownBody = 64 << 10

func (c *Console) messagePage(w http.ResponseWriter, r *http.Request, v viewer) {
	ctx, cancel := c.ctx(r)
	defer cancel()
	name := r.PathValue("topic")
	q, err1 := strconv.Atoi(r.PathValue("queue"))
	off, err2 := strconv.ParseInt(r.PathValue("offset"), 10, 64)
	if err1 != nil || err2 != nil || q < 0 || off < 0 {
		c.badInput(w, r, v, "The queue and offset must be non-negative numbers.")
		return
	}
	res, err := c.b.Pull(ctx, &equeue.PullRequest{Topic: name, Queue: q, Offset: off, Max: 1})
	if big := tooLarge(err, off); big != nil {
		c.tooLargePage(ctx, w, r, v, name, q, off, big)
		return
	}
	if err != nil {
		c.brokerFail(w, r, v, fmt.Sprintf("reading %s/%d at %d", name, q, off), err)
		return
	}
	if len(res.Messages) == 0 || res.Messages[0].Offset != off {
		c.fail(w, r, v, http.StatusNotFound, "Message not found", fmt.Sprintf("Queue %d of %s holds no message at offset %d (stored range: %d to %d).", q, name, off, res.MinOffset, res.MaxOffset))
		return
	}
	m := res.Messages[0]
	progress, err := c.progress(ctx, name)
	if err != nil {
		c.brokerFail(w, r, v, "listing groups", err)
		return
	}
	d := messageData{M: m, Size: len(m.Body), Progress: progress[equeue.QueueRef{Topic: name, Queue: q}]}
	d.Views = []string{"text", "json", "hex"}
	d.View = r.URL.Query().Get("view")
	if !slices.Contains(d.Views, d.View) {
		d.View = defaultView(m.Body)
	}
	d.Body, d.Cut = renderBody(m.Body, d.View, maxShownBody)
	for _, k := range sortedKeys(m.Properties) {
		d.Props = append(d.Props, field{k, m.Properties[k]})
	}
	c.render(w, r, v, http.StatusOK, "message", fmt.Sprintf("Message %s/%d@%d", name, q, off), d)
}

func defaultView(b []byte) string {
	switch {
	case json.Valid(b) && len(bytes.TrimSpace(b)) > 0:
		return "json"
	case utf8.Valid(b):
		return "text"
	}
	return "hex"
}

// preview is a list's one-line view of a body of size bytes from head, its
// first bytes (listed keeps previewBytes): up to 80 runes with white space
// folded, and "…" when the body goes on; or the size when head is not
// UTF-8. A rune cut at the end of a head shorter than the body is dropped.
func preview(head []byte, size int) string {
	const n = 80
	cut := len(head) < size
	if cut {
		head = dropCutRune(head)
	}
	if !utf8.Valid(head) {
		return fmt.Sprintf("(%d bytes, binary)", size)
	}
	s := strings.Join(strings.Fields(string(head)), " ")
	if utf8.RuneCountInString(s) > n {
		rs := []rune(s)
		return string(rs[:n]) + "…"
	}
	if cut {
		return s + "…"
	}
	return s
}

// dropCutRune returns b without the first bytes of a multi-byte rune that
// b's end cuts, if it cuts one.
func dropCutRune(b []byte) []byte {
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return b
			}
			return b[:i]
		}
	}
	return b
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// parseTime reads RFC 3339 or a date and time without zone, taken as UTC
// (what an HTML datetime-local field sends).
func parseTime(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}
