package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/equeue-go/equeue/remote"
)

// The cookies' names. At the root of its host over HTTPS the console names
// them with hostPrefix (see auth.cookieName).
const (
	sessionCookie = "equeue_console"
	anonCookie    = "equeue_console_csrf"
	hostPrefix    = "__Host-"
	csrfField     = "csrf"
	maxSessions   = 1024
	// maxTokenSessions bounds one token's sessions: its oldest goes when
	// it signs in once more, so that signing in again and again with one
	// token cannot take the slots of others' sessions.
	maxTokenSessions = 16
)

// auth holds the console's tokens, login sessions and CSRF secret.
type auth struct {
	tokens map[[sha256.Size]byte]remote.Rights // nil: no authentication
	ttl    time.Duration
	path   string // cookie path: the prefix
	secret []byte
	// https reports whether a request's browser came over HTTPS, so that
	// its cookies are Secure (Console.viaHTTPS).
	https func(*http.Request) bool

	mu       sync.Mutex
	sessions map[string]session
	seq      uint64 // the last session's seq
	throttle loginThrottle
}

type session struct {
	rights  remote.Rights
	expires time.Time
	token   [sha256.Size]byte // the hash of the token signed in with
	seq     uint64            // sessions in the order they started
}

func newAuth(tokens map[string]remote.Rights, ttl time.Duration, prefix string, https func(*http.Request) bool) *auth {
	a := &auth{ttl: ttl, path: prefix, secret: randomBytes(32), https: https, sessions: map[string]session{}}
	if len(tokens) > 0 {
		a.tokens = make(map[[sha256.Size]byte]remote.Rights, len(tokens))
		for tok, r := range tokens {
			if tok != "" {
				a.tokens[sha256.Sum256([]byte(tok))] = r
			}
		}
	}
	return a
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (crypto/rand, Go 1.24+)
	return b
}

// viewer is who made a request and what they may do.
type viewer struct {
	// known is false when tokens are required and none was presented.
	known  bool
	rights remote.Rights
	// identity binds the CSRF token: the session, bearer token or anonymous
	// cookie the request carried.
	identity string
	// session is set for a logged-in user (who can log out).
	session bool
	csrf    string
}

func (v viewer) canView() bool {
	return v.known && mayView(v.rights)
}

// mayView reports whether rights let a caller see the console.
func mayView(r remote.Rights) bool {
	return r&(remote.RightAdmin|remote.RightConsume) != 0
}

// notViewer is why a token that may not see the console is refused.
const notViewer = "This token may not view the console (it needs the consume or admin right)."

// who identifies the request, setting the anonymous CSRF cookie when the
// caller has none yet.
func (a *auth) who(w http.ResponseWriter, r *http.Request) viewer {
	v := viewer{}
	if a.tokens == nil {
		v.known, v.rights = true, remote.RightAll
	} else if ck, err := r.Cookie(a.cookieName(r, sessionCookie)); err == nil {
		if s, ok := a.lookup(ck.Value); ok {
			v.known, v.rights, v.session, v.identity = true, s.rights, true, "s:"+ck.Value
		}
	}
	if a.tokens != nil && !v.known {
		if tok, ok := bearerToken(r); ok {
			sum := sha256.Sum256([]byte(tok))
			if rights, ok := a.tokens[sum]; ok {
				v.known, v.rights = true, rights
				v.identity = "b:" + base64.RawURLEncoding.EncodeToString(sum[:])
			}
		}
	}
	if v.identity == "" {
		ck, err := r.Cookie(a.cookieName(r, anonCookie))
		val := ""
		if err == nil && len(ck.Value) >= 16 {
			val = ck.Value
		} else {
			val = base64.RawURLEncoding.EncodeToString(randomBytes(18))
			http.SetCookie(w, a.cookie(r, anonCookie, val, 0))
		}
		v.identity = "a:" + val
	}
	v.csrf = a.csrfFor(v.identity)
	return v
}

// bearerToken returns the token of an "Authorization: Bearer" header. The
// scheme is case-insensitive (RFC 9110); another scheme, such as the Basic
// credentials a proxy in front of the console asks for, is no bearer token.
func bearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// cookieName is what cookie name is called for r. A console served at
// the root of its host and reached over HTTPS prefixes it with __Host-:
// a browser then takes the cookie only Secure, from this origin, with
// Path=/ and no Domain, so that a sibling subdomain or a page over plain
// HTTP cannot plant one (a CSRF cookie of its choosing, or a session
// of its own). Under a path prefix the cookies' Path is the prefix,
// which such a name does not allow: there, and over plain HTTP, the name
// has no prefix.
func (a *auth) cookieName(r *http.Request, name string) string {
	if a.path == "/" && a.https(r) {
		return hostPrefix + name
	}
	return name
}

// cookie is the cookie name (unprefixed: see cookieName) for r.
func (a *auth) cookie(r *http.Request, name, value string, maxAge int) *http.Cookie {
	return &http.Cookie{Name: a.cookieName(r, name), Value: value, Path: a.path, MaxAge: maxAge, HttpOnly: true, Secure: a.https(r), SameSite: http.SameSiteStrictMode}
}

func (a *auth) csrfFor(identity string) string {
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte(identity))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfOK checks the form's CSRF token against the caller's identity.
func (a *auth) csrfOK(r *http.Request, v viewer) bool {
	got := r.PostFormValue(csrfField)
	return got != "" && hmac.Equal([]byte(got), []byte(v.csrf))
}

// checkToken returns the rights of a token and its hash.
func (a *auth) checkToken(tok string) (remote.Rights, [sha256.Size]byte, bool) {
	if a.tokens == nil || tok == "" {
		return 0, [sha256.Size]byte{}, false
	}
	sum := sha256.Sum256([]byte(tok))
	r, ok := a.tokens[sum]
	return r, sum, ok
}

func (a *auth) lookup(id string) (session, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s, ok := a.sessions[id]
	if !ok {
		return session{}, false
	}
	if time.Now().After(s.expires) {
		delete(a.sessions, id)
		return session{}, false
	}
	return s, true
}

// start opens a session of the token whose hash is token, evicting
// expired sessions, that token's oldest when it holds maxTokenSessions,
// and the oldest of all when full.
func (a *auth) start(token [sha256.Size]byte, rights remote.Rights) string {
	id := base64.RawURLEncoding.EncodeToString(randomBytes(24))
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	mine, oldestMine := 0, ""
	for k, s := range a.sessions {
		switch {
		case now.After(s.expires):
			delete(a.sessions, k)
		case s.token == token:
			mine++
			if oldestMine == "" || s.seq < a.sessions[oldestMine].seq {
				oldestMine = k
			}
		}
	}
	if mine >= maxTokenSessions {
		delete(a.sessions, oldestMine)
	}
	if len(a.sessions) >= maxSessions {
		oldest := ""
		for k, s := range a.sessions {
			if oldest == "" || s.seq < a.sessions[oldest].seq {
				oldest = k
			}
		}
		delete(a.sessions, oldest)
	}
	a.seq++
	a.sessions[id] = session{rights: rights, expires: now.Add(a.ttl), token: token, seq: a.seq}
	return id
}

func (a *auth) end(id string) {
	a.mu.Lock()
	delete(a.sessions, id)
	a.mu.Unlock()
}

// pageFunc renders one page for a viewer that may see it.
type pageFunc func(w http.ResponseWriter, r *http.Request, v viewer)

// view admits viewers that may look; others go to the login form (or get
// 401/403).
func (c *Console) view(f pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := c.auth.who(w, r)
		if !c.bearerOK(w, r, v) {
			return
		}
		if !v.known {
			http.Redirect(w, r, c.prefix+"login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		}
		if !v.canView() {
			c.fail(w, r, v, http.StatusForbidden, "Not allowed", notViewer)
			return
		}
		f(w, r, v)
	})
}

// act admits POSTs with a valid CSRF token from viewers with the admin right.
func (c *Console) act(f pageFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := c.auth.who(w, r)
		if !c.bearerOK(w, r, v) {
			return
		}
		if !v.known {
			c.fail(w, r, v, http.StatusUnauthorized, "Not signed in", "Sign in with a token that has the admin right to do this.")
			return
		}
		if !c.auth.csrfOK(r, v) {
			c.fail(w, r, v, http.StatusForbidden, "Request refused", "The form's security token is missing or stale. Reload the page and try again.")
			return
		}
		if v.rights&remote.RightAdmin == 0 {
			c.fail(w, r, v, http.StatusForbidden, "Not allowed", "This token may look but not change anything (it needs the admin right).")
			return
		}
		f(w, r, v)
	})
}

// bearerOK answers a request whose bearer token is unknown (401) or comes
// while the login throttle refuses its source (429), and counts the failure: a
// bearer header is throttled like the login form. A request without a
// bearer token (none, or another scheme's credentials) passes.
func (c *Console) bearerOK(w http.ResponseWriter, r *http.Request, v viewer) bool {
	if c.auth.tokens == nil || v.session {
		return true
	}
	if _, ok := bearerToken(r); !ok {
		return true
	}
	source, now := c.throttleKey(r), time.Now()
	if why := c.auth.throttle.wait(source, now); why != "" {
		c.fail(w, r, v, http.StatusTooManyRequests, "Too many failed sign-ins", why)
		return false
	}
	if !v.known {
		c.auth.throttle.failed(source, now)
		c.fail(w, r, v, http.StatusUnauthorized, "Not signed in", "The bearer token is not one this console knows.")
		return false
	}
	return true
}

func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	v := c.auth.who(w, r)
	if c.auth.tokens == nil {
		http.Redirect(w, r, c.prefix, http.StatusSeeOther)
		return
	}
	c.render(w, r, v, http.StatusOK, "login", "Sign in", loginData{Next: c.safeNext(r.URL.Query().Get("next"))})
}

type loginData struct {
	Next  string
	Error string
}

func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	v := c.auth.who(w, r)
	if c.auth.tokens == nil {
		http.Redirect(w, r, c.prefix, http.StatusSeeOther)
		return
	}
	next := c.safeNext(r.PostFormValue("next"))
	if !c.auth.csrfOK(r, v) {
		c.render(w, r, v, http.StatusForbidden, "login", "Sign in", loginData{Next: next, Error: "The form expired. Please try again."})
		return
	}
	source, now := c.throttleKey(r), time.Now()
	if why := c.auth.throttle.wait(source, now); why != "" {
		c.render(w, r, v, http.StatusTooManyRequests, "login", "Sign in", loginData{Next: next, Error: why})
		return
	}
	rights, token, ok := c.auth.checkToken(r.PostFormValue("token"))
	if !ok {
		c.auth.throttle.failed(source, now)
		c.render(w, r, v, http.StatusUnauthorized, "login", "Sign in", loginData{Next: next, Error: "Unknown token."})
		return
	}
	if !mayView(rights) {
		// A session of it could show nothing: none is started, so
		// that it takes no session slot.
		c.render(w, r, v, http.StatusForbidden, "login", "Sign in", loginData{Next: next, Error: notViewer})
		return
	}
	id := c.auth.start(token, rights)
	http.SetCookie(w, c.auth.cookie(r, sessionCookie, id, int(c.o.SessionTTL/time.Second)))
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	v := c.auth.who(w, r)
	if !c.auth.csrfOK(r, v) {
		c.fail(w, r, v, http.StatusForbidden, "Request refused", "The form's security token is missing or stale.")
		return
	}
	if ck, err := r.Cookie(c.auth.cookieName(r, sessionCookie)); err == nil {
		c.auth.end(ck.Value)
	}
	http.SetCookie(w, c.auth.cookie(r, sessionCookie, "", -1))
	http.Redirect(w, r, c.prefix+"login", http.StatusSeeOther)
}

// safeNext keeps a post-login target only when it is a path of this console.
func (c *Console) safeNext(next string) string {
	// Browsers drop tabs and newlines from a Location ("/\t/x" is "//x",
	// another host): no control character passes.
	ctl := strings.IndexFunc(next, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0
	if !strings.HasPrefix(next, c.prefix) || strings.HasPrefix(next, "//") || strings.ContainsRune(next, '\\') || ctl {
		return c.prefix
	}
	// A dot segment climbs out of the prefix once resolved: http.Redirect
	// resolves a plain one, a browser an escaped one ("%2e%2e") and any in
	// a target that does not parse, which http.Redirect sends as it is.
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return c.prefix
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if seg = strings.ReplaceAll(strings.ToLower(seg), "%2e", "."); seg == "." || seg == ".." {
			return c.prefix
		}
	}
	return next
}
