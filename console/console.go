package console

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/loopback"
	"github.com/equeue-go/equeue/remote"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Broker is what the console needs from a broker: the administration seam
// and unfenced pulls to browse queues. *equeue.Engine and *remote.Client
// implement it.
type Broker interface {
	remote.Admin
	// Pull reads a queue without a group (the message browser).
	Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error)
}

var (
	_ Broker = (*equeue.Engine)(nil)
	_ Broker = (*remote.Client)(nil)
)

// statser is implemented by brokers that report their store size
// in-process (*equeue.Engine).
type statser interface{ Stats() equeue.Stats }

// remoteStatser is implemented by brokers that report it over the wire
// (*remote.Client).
type remoteStatser interface {
	EngineStats(ctx context.Context) (equeue.Stats, error)
}

// delayedLister is implemented by brokers that report delayed messages
// (*equeue.Engine and *remote.Client).
type delayedLister interface {
	Delayed(ctx context.Context, max int) (equeue.DelayedInfo, error)
}

// Options configure a console. The zero value serves at "/" with every
// action enabled and no authentication of its own.
type Options struct {
	// Prefix is the path the console is mounted at, such as "/admin/",
	// unescaped: "/ops console/" is served at "/ops%20console/". Empty
	// means "/". Leading and trailing slashes are added when missing.
	Prefix string
	// ReadOnly registers no route that changes anything: the console only
	// shows.
	ReadOnly bool
	// Tokens, when not empty, requires a login with one of these tokens
	// (the server's bearer tokens): RightAdmin may act, RightConsume may
	// look. Nil means the console does no authentication; on a loopback
	// address it then answers only requests addressed to localhost or a
	// loopback address (any other Host gets 403: a web page that reached
	// it by DNS rebinding), so a proxy in front of it must send such a
	// Host. Every token here reaches all the console's Backend shows:
	// leave out tokens the gRPC server scopes to a namespace
	// (remote.ServerOptions.TokenNamespaces), or give each namespace its
	// own console over its Namespace view.
	Tokens map[string]remote.Rights
	// Title is shown in the header. Empty means "equeue".
	Title string
	// ScanLimit is how many messages one search by key or ID reads at most
	// (the newest of each queue). Zero means 10,000.
	ScanLimit int
	// SessionTTL is how long a login lasts. Zero means 12 hours.
	SessionTTL time.Duration
	// RequestTimeout bounds each call to the broker a page makes (a rate
	// limited redrive runs until done or the request ends). Zero means 10 s.
	RequestTimeout time.Duration
	// Logger receives failed broker calls. Nil means silent.
	Logger *slog.Logger
	// TrustedProxies are the reverse proxies in front of the console (one
	// address is a /32 or /128 prefix; an IPv4-mapped IPv6 network such
	// as ::ffff:10.0.0.0/104 is taken as its IPv4 network, 10.0.0.0/8, as
	// peers' addresses are compared unmapped). The login throttle counts a
	// request from one of them against the rightmost address of its
	// X-Forwarded-For header that is not one of them; each must append the
	// address it was reached from to that header. Nil trusts no header:
	// every request comes from its peer address, and behind a proxy all
	// users share the proxy's failures. A request from one of them with
	// X-Forwarded-Proto https (its first value) gets Secure cookies, as
	// one over TLS does: a proxy that terminates TLS must set that header.
	TrustedProxies []netip.Prefix
}

const (
	defaultScanLimit  = 10_000
	defaultSessionTTL = 12 * time.Hour
	defaultTimeout    = 10 * time.Second
	maxPageSize       = 500
	defaultPageSize   = 50
	// maxRequestBody bounds every request's body: the largest form, a
	// redrive of selected dead letters, is far smaller.
	maxRequestBody = 1 << 20
)

// Console is the console's http.Handler.
type Console struct {
	b       Broker
	o       Options
	prefix  string // Options.Prefix cleaned and escaped: links, routes, cookies
	path    string // the same unescaped, as r.URL.Path has it
	mux     *http.ServeMux
	pages   map[string]*template.Template
	auth    *auth
	rates   *rates
	static  http.Handler
	started time.Time
	// actions are the patterns of the routes that change the engine (act),
	// as registered: the rights tests post to each one.
	actions []string
}

// New returns the console for b. See Options for what can be set.
func New(b Broker, o Options) http.Handler {
	c := &Console{b: b, o: o, path: cleanPrefix(o.Prefix), rates: newRates(), started: time.Now()}
	c.prefix = escapeSegments(c.path)
	if c.o.Title == "" {
		c.o.Title = "equeue"
	}
	if c.o.ScanLimit <= 0 {
		c.o.ScanLimit = defaultScanLimit
	}
	if c.o.SessionTTL <= 0 {
		c.o.SessionTTL = defaultSessionTTL
	}
	if c.o.RequestTimeout <= 0 {
		c.o.RequestTimeout = defaultTimeout
	}
	if len(o.TrustedProxies) > 0 {
		c.o.TrustedProxies = normalProxies(o.TrustedProxies)
	}
	if c.o.Logger == nil {
		c.o.Logger = slog.New(slog.DiscardHandler)
	}
	c.auth = newAuth(o.Tokens, c.o.SessionTTL, c.prefix, c.viaHTTPS)
	c.pages = c.parsePages()
	sub, _ := fs.Sub(staticFS, "static") // the directory is embedded: cannot fail
	c.static = http.StripPrefix(c.path+"static/", http.FileServerFS(sub))
	c.routes()
	return c
}

// cleanPrefix turns any prefix into "/", or "/a/b/".
func cleanPrefix(p string) string {
	p = path.Clean("/" + p)
	if p == "/" {
		return p
	}
	return p + "/"
}

// escapeSegments escapes each segment of a clean path, so that a prefix
// holding a space or a brace is a literal in the routes' patterns (which
// would otherwise not parse) and a valid URL in links.
func escapeSegments(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.Join(segs, "/")
}

func (c *Console) routes() {
	m := http.NewServeMux()
	p := c.prefix
	m.HandleFunc("GET "+p+"static/", c.serveStatic)
	m.HandleFunc("GET "+p+"login", c.loginPage)
	m.HandleFunc("POST "+p+"login", c.login)
	m.HandleFunc("POST "+p+"logout", c.logout)
	m.Handle("GET "+p+"{$}", c.view(c.overview))
	m.Handle("GET "+p+"topics/{topic}", c.view(c.topicPage))
	m.Handle("GET "+p+"topics/{topic}/messages", c.view(c.messagesPage))
	m.Handle("GET "+p+"topics/{topic}/messages/{queue}/{offset}", c.view(c.messagePage))
	m.Handle("GET "+p+"groups/{group}", c.view(c.groupPage))
	m.Handle("GET "+p+"groups/{group}/retry", c.view(c.retryPage))
	m.Handle("GET "+p+"groups/{group}/dlq", c.view(c.dlqPage))
	m.Handle("GET "+p+"delayed", c.view(c.delayedPage))
	if !c.o.ReadOnly {
		for _, a := range []struct {
			pattern string
			f       pageFunc
		}{
			{"topics/{topic}/queues", c.addQueues},
			{"topics/{topic}/queues/{queue}/writable", c.setWritable},
			{"groups/{group}/reset", c.resetOffsets},
			{"groups/{group}/dlq/redrive", c.redrive},
		} {
			m.Handle("POST "+p+a.pattern, c.act(a.f))
			c.actions = append(c.actions, "POST "+p+a.pattern)
		}
	}
	m.HandleFunc(p, c.notFound)
	c.mux = m
}

// ServeHTTP serves the console's pages, actions and assets.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	// frame-ancestors above is the rule; this is for browsers without it.
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	if c.auth.tokens == nil && loopback.Rebound(r) {
		// Without tokens the console trusts whoever reaches it: on a
		// loopback address, a web page of another site whose name was
		// made to resolve to 127.0.0.1 (DNS rebinding) would be, to the
		// operator's browser, of the console's origin, reading its pages
		// and posting its forms. It sends that site's name as Host.
		http.Error(w, "this console has no tokens and answers only requests to localhost or a loopback address, not to "+strconv.Quote(r.Host), http.StatusForbidden)
		return
	}
	// Bounded here, before any handler parses a form: a multipart upload
	// read without a bound goes to memory and temporary files to its end.
	r.Body = http.MaxBytesReader(w, r.Body, maxRequestBody)
	if !strings.HasPrefix(r.URL.Path, c.path) {
		c.notFound(w, r)
		return
	}
	c.mux.ServeHTTP(w, r)
}

func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "public, max-age=3600")
	c.static.ServeHTTP(w, r)
}

func (c *Console) notFound(w http.ResponseWriter, r *http.Request) {
	v := c.auth.who(w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		c.fail(w, r, v, http.StatusMethodNotAllowed, "No such action", "This console does not accept "+r.Method+" at this address"+c.readOnlyNote()+".")
		return
	}
	c.fail(w, r, v, http.StatusNotFound, "Page not found", "There is no page at this address.")
}

func (c *Console) readOnlyNote() string {
	if c.o.ReadOnly {
		return " (it is read-only)"
	}
	return ""
}

// ctx bounds one page's broker calls.
func (c *Console) ctx(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), c.o.RequestTimeout)
}
