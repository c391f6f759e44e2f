package main

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestServe_Console(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders", "--queues", "2")
	addr, caddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--console", caddr, "--console-prefix", "ops",
		"--token", "boss=all", "--token", "viewer=consume")
	base := "http://" + caddr + "/ops/"
	eventually(t, 20*time.Second, "the console answers", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet(base + "login")
		return err == nil && code == http.StatusOK
	})
	ok(t, "--server", addr, "--token", "boss", "produce", "orders", "hello")

	// Without a token the console asks for one; with the server's tokens it
	// shows the engine, and only the admin token may act.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}
	if code, _ := get("topics/orders", ""); code != http.StatusSeeOther {
		t.Fatalf("anonymous: %d, want a redirect to the login form", code)
	}
	code, body := get("topics/orders", "viewer")
	if code != http.StatusOK || !strings.Contains(body, "<h1>orders") {
		t.Fatalf("viewer: %d %s", code, body)
	}
	code, body = get("topics/orders", "boss")
	if code != http.StatusOK || !strings.Contains(body, "Add queues") {
		t.Fatalf("boss: %d", code)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatal("no CSRF token on the topic page")
	}
	req, _ := http.NewRequest(http.MethodPost, base+"topics/orders/queues", strings.NewReader(url.Values{"csrf": {csrf[1]}, "count": {"1"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "Bearer boss")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("add queues: %d", resp.StatusCode)
	}
	topics := decode[[]topicJSON](t, ok(t, "--server", addr, "--token", "boss", "topic", "list", "--json"))
	if len(topics) != 1 || len(topics[0].Queues) != 3 {
		t.Fatalf("topics after adding a queue in the console: %+v", topics)
	}
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exit code %d\n%s", code, srv.stderr)
	}
}

// TestServe_ConsolePrefixWithASpace serves the console under a prefix that
// is no valid route pattern as written: serve does not panic, and the
// console answers at the escaped path.
func TestServe_ConsolePrefixWithASpace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, caddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--console", caddr, "--console-prefix", "ops console")
	base := "http://" + caddr + "/ops%20console/"
	eventually(t, 20*time.Second, "the console answers", func() bool {
		if srv.exited() { // only then are err and stderr set
			t.Fatalf("serve exited: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet(base)
		return err == nil && code == http.StatusOK
	})
	code, body, err := httpGet(base + "delayed")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, 0, srv.stop(t), "exit code")
}

// TestServe_ConsoleWithoutTokensAnswersOnlyLoopbackNames serves a console
// without tokens on a loopback address, which trusts whoever reaches it. A
// web page of another site reaches it too, by DNS rebinding: its own name
// made to resolve to 127.0.0.1, so that the browser sends the console's
// pages and forms to that page as same-origin, with the page's name as
// Host. Such a request is refused: it neither reads a page (nor its CSRF
// token) nor acts; localhost and loopback addresses are served.
func TestServe_ConsoleWithoutTokensAnswersOnlyLoopbackNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "orders", "--queues", "2")
	addr, caddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--console", caddr)
	_, port, err := net.SplitHostPort(caddr)
	require.NoError(t, err)
	eventually(t, 20*time.Second, "the console answers", func() bool {
		if srv.exited() { // only then are err and stderr set
			t.Fatalf("serve exited: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet("http://" + caddr + "/")
		return err == nil && code == http.StatusOK
	})

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()
	do := func(method, path, host string, form url.Values) (int, string) {
		req, err := http.NewRequest(method, "http://"+caddr+path, strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Host = host
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	csrfRE := regexp.MustCompile(`name="csrf" value="([^"]+)"`)

	rebound := net.JoinHostPort("rebound.example", port)
	code, body := do(http.MethodGet, "/topics/orders", rebound, nil)
	assert.Equal(t, http.StatusForbidden, code, "a page read under another site's name")
	assert.False(t, csrfRE.MatchString(body), "a CSRF token read under another site's name")
	tok := "none"
	if m := csrfRE.FindStringSubmatch(body); m != nil {
		tok = m[1]
	}
	code, _ = do(http.MethodPost, "/topics/orders/queues", rebound, url.Values{"csrf": {tok}, "count": {"1"}})
	assert.Equal(t, http.StatusForbidden, code, "an action under another site's name")
	topics := decode[[]topicJSON](t, ok(t, "--server", addr, "topic", "list", "--json"))
	require.Len(t, topics, 1)
	assert.Len(t, topics[0].Queues, 2, "no queue added")

	for _, host := range []string{caddr, net.JoinHostPort("localhost", port), "localhost", "[::1]:" + port} {
		code, body := do(http.MethodGet, "/topics/orders", host, nil)
		assert.Equal(t, http.StatusOK, code, "Host %s: %s", host, body)
	}
	assert.Equal(t, 0, srv.stop(t), "exit code")
}

// TestServe_ConsoleTrustedProxy serves the console behind a "proxy" on the
// loopback address (--console-trusted-proxy, repeated and comma-separated,
// a bare address among them): failed sign-ins are counted against the
// client the proxy names in X-Forwarded-For, not against the proxy.
func TestServe_ConsoleTrustedProxy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr, caddr := freePort(t), freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr, "--console", caddr, "--token", "boss=all",
		"--console-trusted-proxy", "10.0.0.0/8,127.0.0.1", "--console-trusted-proxy", "::1")
	base := "http://" + caddr + "/"
	eventually(t, 20*time.Second, "the console answers", func() bool {
		if srv.exited() { // srv.err is read only once it is written
			t.Fatalf("serve exited: %v\n%s", srv.err, srv.stderr)
		}
		code, _, err := httpGet(base + "login")
		return err == nil && code == http.StatusOK
	})
	c := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer c.CloseIdleConnections()
	get := func(token, client string) int {
		req, err := http.NewRequest(http.MethodGet, base, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("X-Forwarded-For", client)
		resp, err := c.Do(req)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		require.NoError(t, resp.Body.Close())
		return resp.StatusCode
	}
	for range 10 {
		require.Equal(t, http.StatusUnauthorized, get("guess", "198.51.100.7"))
	}
	assert.Equal(t, http.StatusTooManyRequests, get("boss", "198.51.100.7"), "the guesser waits")
	assert.Equal(t, http.StatusOK, get("boss", "198.51.100.8"), "another client of the proxy does not")
	assert.Equal(t, 0, srv.stop(t), "exit code")
}

// TestServe_ConsoleTrustedProxyRefusesABadValue: a value that is no
// address or network is a usage error naming the flag, before serve
// creates anything.
func TestServe_ConsoleTrustedProxyRefusesABadValue(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"proxy.example", "10.0.0.0/33", "10.0.0.1/", "10.0.0.0/8,,::1"} {
		dir := filepath.Join(t.TempDir(), "data")
		fails(t, 2, "--console-trusted-proxy", "serve", "--dir", dir, "--listen", freePort(t), "--console", freePort(t),
			"--console-trusted-proxy", bad)
		assert.NoDirExists(t, dir, "%q: nothing is created", bad)
	}
	fails(t, 2, `--console-trusted-proxy "proxy.example": want an address or a network`, "serve", "--dir", t.TempDir(),
		"--listen", freePort(t), "--console", freePort(t), "--console-trusted-proxy", "proxy.example")
}
func TestParseTrustedProxies(t *testing.T) {
	got, err := parseTrustedProxies([]string{"10.1.2.3", "192.168.0.0/16", "2001:db8::/32", "::1", "::ffff:10.9.9.9", "172.16.5.4/12", "fe80::1%eth0", "::ffff:10.0.0.0/104"})
	require.NoError(t, err)
	want := []string{"10.1.2.3/32", "192.168.0.0/16", "2001:db8::/32", "::1/128", "10.9.9.9/32", "172.16.0.0/12", "fe80::1/128", "10.0.0.0/8"}
	require.Len(t, got, len(want))
	for i, p := range got {
		assert.Equal(t, want[i], p.String())
	}
	for _, bad := range []string{"", "host", "10.0.0.0/33", "::1/129", "10.0.0.1/x", "10.0.0.1:80"} {
		_, err := parseTrustedProxies([]string{bad})
		assert.Error(t, err, "%q", bad)
	}
}
