package console_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
)

// A redrive rate that is not a usable number of messages per second (NaN,
// or so small that its interval overflows) is refused as bad input, not a
// panic of the handler.
func TestConsole_RedriveRateOutOfRangeIsBadInput(t *testing.T) {
	e := openEngine(t)
	require.NoError(t, e.CreateTopic(ctxT(t), "orders", 1))
	s := serve(t, e, console.Options{})
	tok := csrf(t, s.get(t, prefix+"topics/orders"))
	for _, rate := range []string{"NaN", "1e-12"} {
		pg := s.post(t, prefix+"groups/billing/dlq/redrive", url.Values{"csrf": {tok}, "confirm": {"1"}, "offset": {"0"}, "rate": {rate}})
		assert.Equal(t, http.StatusBadRequest, pg.status, "rate %s: %s", rate, pg.body)
	}
}

// Mounted at "/", the login form's next target cannot lead off the site
// by a tab or newline, which browsers drop from a Location ("/\t/evil"
// becomes "//evil", another host).
func TestConsole_LoginRedirectAtTheRootStaysOnTheSite(t *testing.T) {
	e := openEngine(t)
	srv := httptest.NewServer(console.New(e, console.Options{Tokens: tokens}))
	t.Cleanup(srv.Close)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar}
	t.Cleanup(hc.CloseIdleConnections)
	s := &site{srv: srv, hc: hc}
	base, err := url.Parse(srv.URL + "/login")
	require.NoError(t, err)
	for _, next := range []string{"/\t/evil.example/", "/\n/evil.example/", "/\r\n/evil.example/", "/topics/x"} {
		lp := s.get(t, "/login")
		require.Equal(t, http.StatusOK, lp.status)
		// The login POST sent by hand: Go's client refuses to parse such a
		// Location, a browser follows it.
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/login",
			strings.NewReader(url.Values{"csrf": {csrf(t, lp)}, "token": {"admin-secret"}, "next": {next}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, ck := range jar.Cookies(base) {
			req.AddCookie(ck)
		}
		resp, err := srv.Client().Transport.RoundTrip(req)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		require.Equal(t, http.StatusSeeOther, resp.StatusCode)
		loc := resp.Header.Get("Location")
		// What a browser follows: tabs and newlines removed (WHATWG URL).
		followed, err := base.Parse(strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(loc))
		require.NoError(t, err, "Location %q", loc)
		assert.Equal(t, base.Host, followed.Host, "next %q led to %q", next, loc)
	}
}
