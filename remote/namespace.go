package remote

import (
	"context"
	"fmt"
	"time"

	"github.com/equeue-go/equeue"
)

// backend is what the service calls: the whole engine, or one namespace's
// view of it for calls with a scoped token (ServerOptions.TokenNamespaces).
// Every RPC goes through it, so a new RPC must be served by both.
type backend interface {
	equeue.Broker
	Admin
	CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error
	SetTopicLimits(ctx context.Context, name string, l equeue.TopicLimits) error
	ListDeadLetters(ctx context.Context, group string, req equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error)
	Delayed(ctx context.Context, max int) (equeue.DelayedInfo, error)
	WaitAny(ctx context.Context, pulls []*equeue.PullRequest, wait time.Duration) error
}

var (
	_ backend = (*equeue.Engine)(nil)
	_ backend = (*equeue.Namespace)(nil)
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
		ns, err := s.e.Namespace(name)
		if err != nil {
			return nil, fmt.Errorf("%w: ServerOptions.TokenNamespaces: %w", equeue.ErrInvalidOptions, err)
		}
		out[name] = &service{e: ns, s: s}
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
