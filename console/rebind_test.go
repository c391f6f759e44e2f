package console_test

import (
	"context"
	"io"
	"net"
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

// TestConsole_WithoutTokensOnLoopbackAnswersOnlyLoopbackHosts embeds the
// console, without Tokens, on a loopback listener, as a Go program may
// without `equeue serve` around it. A web page of another site whose name
// is made to resolve to 127.0.0.1 (DNS rebinding) is, to the operator's
// browser, of the console's origin: it could read the pages, their CSRF
// tokens with them, and post the forms. Such a request carries that site's
// name as Host, and gets 403; one to localhost or a loopback address (any
// port, a trailing dot too) is answered. With Tokens the sign-in guards
// the console and the Host is not checked; on an address other than
// loopback neither is it.
func TestConsole_WithoutTokensOnLoopbackAnswersOnlyLoopbackHosts(t *testing.T) {
	e := openEngine(t)
	seed(t, e)
	open := httptest.NewServer(console.New(e, console.Options{Prefix: prefix}))
	t.Cleanup(open.Close)
	guarded := httptest.NewServer(console.New(e, console.Options{Prefix: prefix, Tokens: tokens}))
	t.Cleanup(guarded.Close)
	_, port, err := net.SplitHostPort(open.Listener.Addr().String())
	require.NoError(t, err)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(hc.CloseIdleConnections)

	do := func(base, method, path, host string, form url.Values) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+prefix+path, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Host = host
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		res, err := hc.Do(req)
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res.StatusCode, string(b)
	}
	for _, host := range []string{"evil.example", net.JoinHostPort("evil.example", port), "127.0.0.1.evil.example"} {
		code, body := do(open.URL, "GET", "topics/orders", host, nil)
		assert.Equal(t, http.StatusForbidden, code, "a page with Host %s", host)
		assert.False(t, strings.Contains(body, `name="csrf"`), "a CSRF token read with Host %s", host)
		assert.True(t, strings.Contains(body, host), "the refusal names the Host %s: %s", host, firstLineOf(body))
		// The page's form, posted with what the page read (the cookie
		// is the browser's, kept for the same address).
		tok := "none"
		if m := csrfRE.FindStringSubmatch(body); m != nil {
			tok = m[1]
		}
		code, _ = do(open.URL, "POST", "topics/orders/queues", host, url.Values{"csrf": {tok}, "count": {"1"}})
		assert.Equal(t, http.StatusForbidden, code, "an action with Host %s", host)
	}
	info, err := e.Topic(ctxT(t), "orders")
	require.NoError(t, err)
	assert.Len(t, info.Queues, 4, "no queue added")
	for _, host := range []string{net.JoinHostPort("localhost", port), "localhost.:" + port, net.JoinHostPort("127.0.0.1", port), "[::1]:" + port} {
		code, body := do(open.URL, "GET", "topics/orders", host, nil)
		assert.Equal(t, http.StatusOK, code, "Host %s: %s", host, firstLineOf(body))
	}
	// With tokens, another name as Host meets the sign-in, not a refusal.
	code, _ := do(guarded.URL, "GET", "topics/orders", "console.example", nil)
	assert.Equal(t, http.StatusSeeOther, code, "with tokens: to the sign-in")

	// On a private network's address the Host is not checked.
	req := httptest.NewRequest("GET", prefix+"topics/orders", nil)
	req.Host = "ops.internal:8080"
	req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 8080}))
	rec := httptest.NewRecorder()
	console.New(e, console.Options{Prefix: prefix}).ServeHTTP(rec, req)
	assert.Equal(t, http.StatusOK, rec.Code)
}

// firstLineOf is the first line of s, for a failure's message.
func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
