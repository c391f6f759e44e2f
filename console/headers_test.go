package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/console"
)

// TestConsole_PagesCannotBeFramedOrCached checks every page, the login
// form, an error page and a redirect: no other site may frame them
// (Content-Security-Policy frame-ancestors, and X-Frame-Options for
// browsers without it), and no page is kept by a browser's or a proxy's
// cache, since pages show message bodies, keys and properties.
func TestConsole_PagesCannotBeFramedOrCached(t *testing.T) {
	e := openEngine(t)
	seed(t, e)
	s := serve(t, e, console.Options{})
	check := func(where string, pg page) {
		t.Helper()
		assert.Contains(t, pg.header.Get("Content-Security-Policy"), "frame-ancestors 'none'", where)
		assert.Equal(t, "DENY", pg.header.Get("X-Frame-Options"), where)
		assert.Equal(t, "nosniff", pg.header.Get("X-Content-Type-Options"), where)
	}
	for _, p := range pages {
		pg := s.get(t, prefix+p)
		require.Equal(t, http.StatusOK, pg.status, p)
		check(p, pg)
		assert.Equal(t, "no-store", pg.header.Get("Cache-Control"), p)
	}
	nf := s.get(t, prefix+"topics/nosuch/messages/0/0")
	require.Equal(t, http.StatusNotFound, nf.status)
	check("error page", nf)
	assert.Equal(t, "no-store", nf.header.Get("Cache-Control"), "error page")

	ts := serve(t, e, console.Options{Tokens: tokens})
	lp := ts.get(t, prefix+"login")
	require.Equal(t, http.StatusOK, lp.status)
	check("login", lp)
	assert.Equal(t, "no-store", lp.header.Get("Cache-Control"), "login")
	rd := ts.get(t, prefix+"topics/orders")
	require.Equal(t, http.StatusSeeOther, rd.status)
	check("redirect to the login form", rd)
	st := ts.get(t, prefix+"static/console.css")
	require.Equal(t, http.StatusOK, st.status)
	check("style sheet", st)
	assert.True(t, strings.HasPrefix(st.header.Get("Cache-Control"), "public"), "assets may be cached")
}
