package remote

import (
	"context"
	"fmt"

	"github.com/equeue-go/equeue"
)

// namespaceServices builds one service per namespace a token is scoped to.
func (s *Server) namespaceServices(scoped map[string]string) (map[string]*service, error) {
	if len(scoped) == 0 {
		return nil, nil
	}
	out := map[string]*service{}
	for _, name := range scoped {
		if _, ok := out[name]; ok {
			continue
		}
		eng, ok := s.e.(*equeue.Engine)
		if !ok {
			return nil, fmt.Errorf("%w: ServerOptions.TokenNamespaces needs an engine, not a %T", equeue.ErrInvalidOptions, s.e)
		}
		ns, err := eng.Namespace(name)
		if err != nil {
			return nil, fmt.Errorf("%w: ServerOptions.TokenNamespaces: %w", equeue.ErrInvalidOptions, err)
		}
		out[name] = newService(ns, s)
	}
	return out, nil
}

// serviceFor returns the service that serves a call: its token's
// namespace's, or srv (the whole engine's). Authentication and rights are
// checked after, by guard, whichever service serves.
func (s *Server) serviceFor(ctx context.Context, srv any) any {
	if len(s.spaces) == 0 {
		return srv
	}
	if e, ok := s.tokens.bearer(ctx); ok && e.namespace != "" {
		if v, ok := s.spaces[e.namespace]; ok {
			return v
		}
	}
	return srv
}
