package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
	"github.com/equeue-go/equeue/remote"
)

// TestConsole_OneTokenCannotTakeEverySessionSlot signs in with a token
// that may only look more times than the console keeps sessions: an
// admin's session signed in before stays, and of that token's sessions
// only its newest 16 are kept.
func TestConsole_OneTokenCannotTakeEverySessionSlot(t *testing.T) {
	toks := map[string]remote.Rights{"admin-secret": remote.RightAll, "watcher-secret": remote.RightConsume}
	s := serve(t, openEngine(t), console.Options{Tokens: toks})
	require.Equal(t, http.StatusSeeOther, login(t, s, "admin-secret", prefix).status)
	require.Equal(t, http.StatusOK, s.get(t, prefix).status)

	// Another browser, without a cookie jar: its CSRF cookie and token
	// are sent with every sign-in, and each sign-in's session is kept.
	other := &site{srv: s.srv, hc: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(other.hc.CloseIdleConnections)
	lp := other.get(t, prefix+"login")
	anon := cookieOf(t, lp, "equeue_console_csrf")
	form := url.Values{"csrf": {csrf(t, lp)}, "token": {"watcher-secret"}, "next": {prefix}}
	var ids []string
	for range 1100 {
		pg := other.post(t, prefix+"login", form, "Cookie", "equeue_console_csrf="+anon)
		require.Equal(t, http.StatusSeeOther, pg.status)
		ids = append(ids, cookieOf(t, pg, "equeue_console"))
	}

	assert.Equal(t, http.StatusOK, s.get(t, prefix).status, "the admin's session stays")
	as := func(id string) int { return other.get(t, prefix, "Cookie", "equeue_console="+id).status }
	assert.Equal(t, http.StatusOK, as(ids[len(ids)-1]), "the newest session is signed in")
	assert.Equal(t, http.StatusOK, as(ids[len(ids)-16]), "the token keeps 16 sessions")
	assert.Equal(t, http.StatusSeeOther, as(ids[len(ids)-17]), "its older sessions are gone")
	assert.Equal(t, http.StatusSeeOther, as(ids[0]))
}

// cookieOf returns the value of the cookie name that a response sets.
func cookieOf(t *testing.T, p page, name string) string {
	t.Helper()
	for _, line := range p.header.Values("Set-Cookie") {
		if ck, err := http.ParseSetCookie(line); err == nil && ck.Name == name && strings.TrimSpace(ck.Value) != "" {
			return ck.Value
		}
	}
	require.Failf(t, "no cookie", "the response sets no %s cookie", name)
	return ""
}
