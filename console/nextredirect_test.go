package console_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
)

// escapedDot is a dot as a browser reads it in a path segment.
var escapedDot = regexp.MustCompile(`(?i)%2e`)

// browserPath is the path a browser goes to when a page under the console
// redirects to loc, a path: it reads "%2e" as a dot and resolves dot
// segments (WHATWG URL), which Go's url package leaves alone.
func browserPath(loc string) string {
	p, _, _ := strings.Cut(loc, "?")
	return path.Clean(escapedDot.ReplaceAllString(p, "."))
}

// TestConsole_LoginRedirectCannotLeaveTheConsoleByDotSegments signs in
// with next targets that start with the prefix but climb out of it with
// dot segments, plain or escaped: the redirect a browser follows stays in
// the console. A plain ".." is cleaned by http.Redirect, but not in a
// target that does not parse as a URL (an invalid escape), which it sends
// as it is; an escaped one a browser reads as "..".
func TestConsole_LoginRedirectCannotLeaveTheConsoleByDotSegments(t *testing.T) {
	e := openEngine(t)
	s := serve(t, e, console.Options{Tokens: tokens})
	base, err := url.Parse(s.srv.URL + prefix + "login")
	require.NoError(t, err)
	for _, next := range []string{
		prefix + "%zz/../../evil", prefix + "%zz/../..//evil.example/", prefix + "%2e%2e/other/app", prefix + "%2E%2e/%2e%2E/x",
		prefix + ".%2e/other", prefix + "topics/../../other", prefix + "topics/x",
	} {
		jar, _ := cookiejar.New(nil)
		s.hc.Jar = jar
		lp := s.get(t, prefix+"login")
		require.Equal(t, http.StatusOK, lp.status)
		// Sent by hand: Go's client refuses to follow a Location that does
		// not parse, a browser follows it.
		req, err := http.NewRequest(http.MethodPost, base.String(),
			strings.NewReader(url.Values{"csrf": {csrf(t, lp)}, "token": {"admin-secret"}, "next": {next}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, ck := range jar.Cookies(base) {
			req.AddCookie(ck)
		}
		resp, err := s.srv.Client().Transport.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, next)
		loc := resp.Header.Get("Location")
		assert.True(t, strings.HasPrefix(browserPath(loc)+"/", prefix), "next %q led to %q, which a browser reads as %q", next, loc, browserPath(loc))
	}
}
