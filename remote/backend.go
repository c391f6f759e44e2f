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
//
// A Backend that also has PullStored (as *equeue.Engine and cluster.Node
// do) serves the pulls of clients that read stored batches with it instead
// of Pull, and one with AppendAsync serves the append stream with it
// instead of Append, but only when the Backend owns them
// (equeue.OwnsFastPaths): a type that embeds an *equeue.Engine and
// overrides Pull or Append gets its own methods called, never bypassed.
type Backend interface {
	equeue.Broker

	// WaitAny waits until one of pulls has something (PullMany).
	WaitAny(ctx context.Context, pulls []*equeue.PullRequest, wait time.Duration) error

	// Topics lists the topics.
	Topics(ctx context.Context) ([]equeue.TopicInfo, error)
	// Topic describes one topic.
	Topic(ctx context.Context, name string) (equeue.TopicInfo, error)
	// CreateTopic creates a topic with n queues (0: the default).
	CreateTopic(ctx context.Context, name string, n int) error
	// SetTopicLimits replaces a topic's limits and defaults.
	SetTopicLimits(ctx context.Context, name string, l equeue.TopicLimits) error
	// CreateTopicWith creates a topic with options.
	CreateTopicWith(ctx context.Context, name string, o equeue.TopicOptions) error
	// AddQueues adds queues to a topic.
	AddQueues(ctx context.Context, name string, n int) error
	// SetQueueWritable opens or closes a queue to producers.
	SetQueueWritable(ctx context.Context, name string, queueID int, writable bool) error
	// DeleteTopic deletes a topic and its messages.
	DeleteTopic(ctx context.Context, name string) error
	// Groups lists the consumer groups.
	Groups(ctx context.Context) ([]equeue.GroupInfo, error)
	// Group describes one consumer group.
	Group(ctx context.Context, name string) (equeue.GroupInfo, error)
	// ResetOffsets moves a group's committed offsets.
	ResetOffsets(ctx context.Context, group string, req equeue.ResetRequest) error
	// DeadLetters lists a group's dead letters (positional form).
	DeadLetters(ctx context.Context, group string, from int64, max int) ([]equeue.DLQEntry, error)
	// ListDeadLetters lists a group's dead letters.
	ListDeadLetters(ctx context.Context, group string, req equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error)
	// Redrive sends dead letters back to the group's retry topic, or with
	// req.ToTopic to their topics.
	Redrive(ctx context.Context, group string, req equeue.RedriveRequest) (int, error)
	// Delayed reports pending delayed messages.
	Delayed(ctx context.Context, max int) (equeue.DelayedInfo, error)
	// DeleteGroup deletes a consumer group and what is stored for it.
	DeleteGroup(ctx context.Context, name string, o equeue.DeleteGroupOptions) error
	// DeleteReplyTopic deletes a requester's reply topic.
	DeleteReplyTopic(ctx context.Context, name string) error
}

var (
	_ Backend = (*equeue.Engine)(nil)
	_ Backend = (*equeue.Namespace)(nil)
)

// NewBackendServer returns a server for b (an engine or a cluster node).
// NewServer(e, opts) is NewBackendServer(e, opts).
func NewBackendServer(b Backend, opts *ServerOptions) (*Server, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil backend", equeue.ErrInvalidArgument)
	}
	return newServer(b, opts)
}
