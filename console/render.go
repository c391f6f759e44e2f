package console

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// pageNames lists the templates in templates/, each rendered inside layout.html.
var pageNames = []string{"overview", "topic", "messages", "message", "group", "retry", "dlq", "delayed", "confirm", "login", "error"}

// layoutData is what every page template gets.
type layoutData struct {
	Title     string
	Brand     string
	Prefix    string
	CSRF      string
	CanAct    bool
	ReadOnly  bool
	SignedIn  bool
	Rights    string
	Flash     string
	Refresh   int
	Now       time.Time
	Data      any
	Nav       string
	AuthNeeds bool
}

func (c *Console) funcs() template.FuncMap {
	return template.FuncMap{
		// link joins escaped path segments under the prefix.
		"link": func(segs ...any) string {
			var b strings.Builder
			b.WriteString(c.prefix)
			for i, s := range segs {
				if i > 0 {
					b.WriteByte('/')
				}
				b.WriteString(url.PathEscape(fmt.Sprint(s)))
			}
			return b.String()
		},
		"num":      formatNum,
		"bytes":    formatBytes,
		"ago":      ago,
		"when":     when,
		"internal": isInternal,
		"rate":     func(f float64) string { return fmt.Sprintf("%.1f", f) },
		"add":      func(a, b int64) int64 { return a + b },
	}
}

func (c *Console) parsePages() map[string]*template.Template {
	base := template.Must(template.New("layout.html").Funcs(c.funcs()).ParseFS(templateFS, "templates/layout.html"))
	out := make(map[string]*template.Template, len(pageNames))
	for _, n := range pageNames {
		t := template.Must(template.Must(base.Clone()).ParseFS(templateFS, "templates/"+n+".html"))
		out[n] = t
	}
	return out
}

// render writes one page. It renders into a buffer first, so a template
// failure becomes a clean 500 rather than half a page.
func (c *Console) render(w http.ResponseWriter, r *http.Request, v viewer, status int, page, title string, data any) {
	ld := layoutData{
		Title: title, Brand: c.o.Title, Prefix: c.prefix, CSRF: v.csrf,
		CanAct: !c.o.ReadOnly && v.known && v.rights&remote.RightAdmin != 0, ReadOnly: c.o.ReadOnly,
		SignedIn: v.session, Rights: rightsLabel(c, v), Flash: flash(r.URL.Query().Get("done")),
		Now: time.Now(), Data: data, Nav: page, AuthNeeds: c.auth.tokens != nil,
	}
	if rf, ok := data.(interface{ refresh() int }); ok {
		ld.Refresh = rf.refresh()
	}
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout.html", ld); err != nil {
		c.o.Logger.Error("console: render", "page", page, "err", err)
		http.Error(w, "the console failed to render this page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func rightsLabel(c *Console, v viewer) string {
	if c.auth.tokens == nil {
		return ""
	}
	return v.rights.String()
}

type errorData struct {
	Heading string
	Detail  string
	Status  int
}

// fail renders the error page.
func (c *Console) fail(w http.ResponseWriter, r *http.Request, v viewer, status int, heading, detail string) {
	c.render(w, r, v, status, "error", heading, errorData{Heading: heading, Detail: detail, Status: status})
}

// brokerFail renders a broker error with the status its kind deserves.
func (c *Console) brokerFail(w http.ResponseWriter, r *http.Request, v viewer, what string, err error) {
	status, heading := http.StatusBadGateway, "The broker failed"
	shown := false // a 5xx error whose text is for every viewer
	switch {
	case errors.Is(err, equeue.ErrNotLeader):
		// A cluster follower's refusal names the leader (its node ID and
		// client address, which clients are told anyway): the viewer
		// needs it to go there.
		status, heading, shown = http.StatusServiceUnavailable, "Not the cluster leader", true
	case errors.Is(err, equeue.ErrTopicNotFound), errors.Is(err, equeue.ErrGroupNotFound), errors.Is(err, equeue.ErrQueueNotFound):
		status, heading = http.StatusNotFound, "Not found"
	case errors.Is(err, equeue.ErrInvalidArgument), errors.Is(err, equeue.ErrInvalidName), errors.Is(err, equeue.ErrInvalidFilter):
		status, heading = http.StatusBadRequest, "Invalid request"
	case errors.Is(err, equeue.ErrQueueNotWritable), errors.Is(err, equeue.ErrTopicExists):
		status, heading = http.StatusConflict, "Not possible now"
	case errors.Is(err, remote.ErrPermissionDenied), errors.Is(err, remote.ErrUnauthenticated):
		status, heading = http.StatusForbidden, "The broker refused"
	case errors.Is(err, equeue.ErrMessageTooLarge):
		// Not a failure: the broker does not send a message larger than
		// the client accepts (a remote client's MaxMessageBytes).
		status, heading = http.StatusRequestEntityTooLarge, "Too large for this console's client"
		err = fmt.Errorf("%w (a client with a larger MaxMessageBytes can read it)", err)
	case errors.Is(err, remote.ErrUnavailable), errors.Is(err, equeue.ErrClosed), errors.Is(err, equeue.ErrBusy):
		status, heading = http.StatusServiceUnavailable, "The broker is unavailable"
	case errors.Is(err, r.Context().Err()) && r.Context().Err() != nil:
		status, heading = http.StatusServiceUnavailable, "Request cancelled"
	}
	if status >= 500 && !shown {
		// A broker's own failure can name store paths, addresses or node
		// IDs, which are not for every viewer: the page gives a reference
		// to the full error in the log. A 4xx error explains the viewer's
		// own mistake and is shown as it is.
		ref := errorRef()
		c.o.Logger.Warn("console: broker call failed", "what", what, "ref", ref, "err", err)
		c.fail(w, r, v, status, heading, what+": the broker call failed (reference "+ref+"; the console's log has its error under it).")
		return
	}
	c.fail(w, r, v, status, heading, what+": "+err.Error())
}

// errorRef is a short random reference tying a failure's page to its log
// line.
func errorRef() string { return hex.EncodeToString(randomBytes(5)) }

// badInput renders a 400 page.
func (c *Console) badInput(w http.ResponseWriter, r *http.Request, v viewer, detail string) {
	c.fail(w, r, v, http.StatusBadRequest, "Invalid request", detail)
}

// flash maps the done= query of a redirect after an action to its message;
// only known values are shown, so a link cannot put text on the page.
func flash(done string) string {
	kind, n, _ := strings.Cut(done, ":")
	switch kind {
	case "reset":
		return "Offsets reset."
	case "queues":
		return "Queues added."
	case "closed":
		return "Queue closed to producers."
	case "opened":
		return "Queue opened to producers."
	case "redrive":
		if n == "" {
			n = "0"
		}
		for _, ch := range n {
			if ch < '0' || ch > '9' {
				return ""
			}
		}
		return n + " dead letter(s) sent back to their topics."
	}
	return ""
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }

func isInternal(topic string) bool {
	return strings.HasPrefix(topic, equeue.RetryTopicPrefix) || strings.HasPrefix(topic, equeue.DLQTopicPrefix) || strings.HasPrefix(topic, "%")
}

func formatNum(v any) string {
	s := fmt.Sprint(v)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func formatBytes(v any) string {
	var n int64
	switch x := v.(type) {
	case int:
		n = int64(x)
	case int64:
		n = x
	}
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func when(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000") + " UTC"
}

func ago(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	future := d < 0
	if future {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		s = "now"
		return s
	case d < time.Minute:
		s = fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		s = fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		s = fmt.Sprintf("%dh", int(d.Hours()))
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	if future {
		return "in " + s
	}
	return s + " ago"
}
