package console

import (
	"crypto/sha256"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

func (a *auth) sessionCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.sessions)
}

// TestAuth_SessionTableIsBoundedOverAllTokens signs in with more distinct
// tokens than the console keeps sessions, each of them more often than
// one token may hold: the table never holds more than maxSessions, and
// each token no more than maxTokenSessions. Unknown tokens and tokens
// that may not view the console, signed in through the form from many
// addresses, start no session at all.
func TestAuth_SessionTableIsBoundedOverAllTokens(t *testing.T) {
	toks := map[string]remote.Rights{}
	for i := range maxSessions + 100 {
		toks[fmt.Sprintf("token-%d", i)] = remote.RightConsume
	}
	a := newAuth(toks, defaultSessionTTL, "/", func(*http.Request) bool { return false })
	for round := range 2 {
		for tok := range toks {
			_, sum, ok := a.checkToken(tok)
			require.True(t, ok)
			a.start(sum, remote.RightConsume)
			require.LessOrEqual(t, a.sessionCount(), maxSessions, "round %d", round)
		}
	}
	assert.Equal(t, maxSessions, a.sessionCount())
	perToken := map[[sha256.Size]byte]int{}
	a.mu.Lock()
	for _, s := range a.sessions {
		perToken[s.token]++
	}
	a.mu.Unlock()
	for _, n := range perToken {
		assert.LessOrEqual(t, n, maxTokenSessions)
	}

	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	c := New(e, Options{Tokens: map[string]remote.Rights{"sender": remote.RightProduce, "nothing": 0}}).(*Console)
	for i := range 300 {
		tok := []string{"sender", "nothing", fmt.Sprintf("guess-%d", i)}[i%3]
		const anon = "anonymous-visitor-cookie"
		form := url.Values{"csrf": {c.auth.csrfFor("a:" + anon)}, "token": {tok}, "next": {"/"}}
		req := httptest.NewRequest(http.MethodPost, "/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(&http.Cookie{Name: anonCookie, Value: anon})
		req.RemoteAddr = fmt.Sprintf("192.0.2.%d:4000", i%250)
		w := httptest.NewRecorder()
		c.ServeHTTP(w, req)
		assert.NotEqual(t, http.StatusSeeOther, w.Code, "sign-in %d with %s", i, tok)
	}
	assert.Zero(t, c.auth.sessionCount(), "no session started")
}
