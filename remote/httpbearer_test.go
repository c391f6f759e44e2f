package remote_test

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/remote"
)

// Server.HTTPBearer matches an HTTP request's bearer token as a call's:
// the scheme in any case, the token's rights and namespace, and
// ErrUnauthenticated for no token, another scheme or an unknown token; a
// server without tokens admits every request.
func TestServer_HTTPBearerMatchesTheServersTokens(t *testing.T) {
	e := openEngine(t, nil)
	srv, err := remote.NewServer(e, &remote.ServerOptions{
		Tokens:          map[string]remote.Rights{"ops": remote.RightAdmin, "tenant": remote.RightAll},
		TokenNamespaces: map[string]string{"tenant": "tenant-a"},
	})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	bearer := func(authorization string) (remote.Rights, string, error) {
		r := httptest.NewRequest("GET", "/metrics", nil)
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		return srv.HTTPBearer(r)
	}
	for _, h := range []string{"Bearer ops", "bearer ops", "BEARER ops"} {
		rights, ns, err := bearer(h)
		require.NoError(t, err, h)
		assert.Equal(t, remote.RightAdmin, rights, h)
		assert.Empty(t, ns, h)
	}
	rights, ns, err := bearer("Bearer tenant")
	require.NoError(t, err)
	assert.Equal(t, remote.RightAll, rights)
	assert.Equal(t, "tenant-a", ns)
	for _, h := range []string{"", "Basic b3BzOg==", "Bearer wrong", "Bearer"} {
		_, _, err := bearer(h)
		assert.ErrorIs(t, err, remote.ErrUnauthenticated, h)
	}

	open, err := remote.NewServer(e, nil)
	require.NoError(t, err)
	t.Cleanup(open.Stop)
	rights, ns, err = open.HTTPBearer(httptest.NewRequest("GET", "/metrics", nil))
	require.NoError(t, err)
	assert.Equal(t, remote.RightAll, rights)
	assert.Empty(t, ns)
}
