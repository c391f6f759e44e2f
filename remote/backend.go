package remote

import (
	"context"
	"fmt"
	"time"

	"github.com/equeue-go/equeue"
)

// Backend is what a Server serves: the broker seam plus the engine's admin
// calls. *equeue.Engine implements it; so does a replicated cluster node
// (package cluster), whose followers refuse calls with an error matching
// equeue.ErrNotLeader that names the leader (see Error.Leader).
type Backend interface {
	equeue.Broker

	WaitAny(ctx context.Context, pulls []*equeue.PullRequest, wait time.Duration) error

	Topics(ctx context.Context) ([]equeue.TopicInfo, error)
	Topic(ctx context.Context, name string) (equeue.TopicInfo, error)
	CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error
	AddQueues(ctx context.Context, name string, n int) error
	SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error
	DeleteTopic(ctx context.Context, name string) error
	Groups(ctx context.Context) ([]equeue.GroupInfo, error)
	Group(ctx context.Context, name string) (equeue.GroupInfo, error)
	ResetOffsets(ctx context.Context, group string, req equeue.ResetRequest) error
	DeadLetters(ctx context.Context, group string, from int64, max int) ([]equeue.DLQEntry, error)
	Redrive(ctx context.Context, group string, req equeue.RedriveRequest) (int, error)
}

var _ Backend = (*equeue.Engine)(nil)

// NewBackendServer returns a server for b (an engine or a cluster node).
// NewServer(e, opts) is NewBackendServer(e, opts).
func NewBackendServer(b Backend, opts *ServerOptions) (*Server, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil backend", equeue.ErrInvalidArgument)
	}
	return newServer(b, opts)
}
