package remote

import "net/http"

// HTTPBearer matches the token of an HTTP request ("Authorization: Bearer
// <token>") against the server's tokens (ServerOptions.Tokens and
// TokenNamespaces), as a call's token is matched, so that an HTTP endpoint
// served beside the server (metrics, profiling) admits the same tokens. It
// returns the token's rights and its namespace, "" for a token of the
// whole engine. A request without a token, or with one the server does not
// know, gets an error matching ErrUnauthenticated. A server without tokens
// admits every request: RightAll and "".
func (s *Server) HTTPBearer(r *http.Request) (Rights, string, error) {
	if s.tokens == nil {
		return RightAll, "", nil
	}
	e, err := s.tokens.lookup(r.Header.Values("Authorization"))
	if err != nil {
		return 0, "", err
	}
	return e.rights, e.namespace, nil
}
