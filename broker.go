package equeue

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Broker is what Producers and Consumers need from an engine. *Engine
// implements it in-process; a network client (package remote) implements it
// over the wire, so the same producer and consumer logic runs on both.
type Broker interface {
	// Route returns a topic's queues.
	Route(ctx context.Context, topic string) (Route, error)
	// Append stores messages in one queue, in order.
	Append(ctx context.Context, req *AppendRequest) (AppendResult, error)
	// Pull reads messages from one queue (long-poll when req.Wait > 0).
	Pull(ctx context.Context, req *PullRequest) (PullResult, error)

	// JoinGroup adds a member to a consumer group and returns its assignment.
	JoinGroup(ctx context.Context, req *JoinRequest) (Assignment, error)
	// Heartbeat keeps a member alive. It returns at once when the member's
	// assignment version differs from req.KnownVersion, else waits up to
	// req.Wait for a change of the member's assignment.
	Heartbeat(ctx context.Context, req *HeartbeatRequest) (Assignment, error)
	// LeaveGroup removes a member; its queues are handed to the others.
	LeaveGroup(ctx context.Context, req *LeaveRequest) error
	// ReleaseQueues gives up queues a member was asked to hand over, after
	// it committed their offsets.
	ReleaseQueues(ctx context.Context, group, member string, queues []Grant) error
	// CommitOffsets stores the next offset to consume for owned queues, and
	// the attempts already made on their unfinished messages.
	CommitOffsets(ctx context.Context, req *CommitRequest) error
	// FetchOffsets returns the committed state of each granted queue (next
	// offset and stored attempts), resolving (and storing) the group's
	// starting point the first time.
	FetchOffsets(ctx context.Context, group, member string, queues []Grant) ([]OffsetCommit, error)
	// SendBack stores a message the member pulled and failed to handle in
	// its group's retry or dead-letter topic (see SendBackRequest).
	SendBack(ctx context.Context, req *SendBackRequest) (SendBackResult, error)
}

var _ Broker = (*Engine)(nil)

// QueueRef names one queue of a topic.
type QueueRef struct {
	// Topic is the topic name.
	Topic string
	// Queue is the queue number within the topic, from 0.
	Queue int
}

// String formats the queue as "topic/queue".
func (q QueueRef) String() string { return fmt.Sprintf("%s/%d", q.Topic, q.Queue) }

// MessageModel says how a group's members share messages.
type MessageModel int

const (
	// Clustering shares a group's queues among its members: each message is
	// handled by one member of the group.
	Clustering MessageModel = iota
	// Broadcasting gives every member every message, with its own offsets.
	Broadcasting
)

// String returns "clustering" or "broadcasting".
func (m MessageModel) String() string {
	switch m {
	case Clustering:
		return "clustering"
	case Broadcasting:
		return "broadcasting"
	}
	return fmt.Sprintf("MessageModel(%d)", int(m))
}

// ConsumeFrom says where a group with no committed offset starts.
type ConsumeFrom int

const (
	// ConsumeFromDefault is the zero value: a new group starts at the
	// earliest message (ConsumeFromEarliest), so a work queue whose workers
	// start after the first jobs were sent does not skip them.
	ConsumeFromDefault ConsumeFrom = iota
	// ConsumeFromEarliest starts at the oldest stored message.
	ConsumeFromEarliest
	// ConsumeFromTimestamp starts at the first message stored at or after a time.
	ConsumeFromTimestamp
	// ConsumeFromLatest starts at the end of each queue: only messages sent
	// after the group first owned the queue are delivered.
	ConsumeFromLatest
)

// resolve maps ConsumeFromDefault to what it means.
func (f ConsumeFrom) resolve() ConsumeFrom {
	if f == ConsumeFromDefault {
		return ConsumeFromEarliest
	}
	return f
}

// String returns "default", "earliest", "timestamp" or "latest".
func (f ConsumeFrom) String() string {
	switch f {
	case ConsumeFromDefault:
		return "default"
	case ConsumeFromEarliest:
		return "earliest"
	case ConsumeFromTimestamp:
		return "timestamp"
	case ConsumeFromLatest:
		return "latest"
	}
	return fmt.Sprintf("ConsumeFrom(%d)", int(f))
}

// storedFrom is a ConsumeFrom as group metadata stores it. The numbers are
// those of the first releases, where 0 meant latest (then the default), so
// groups stored before keep their meaning.
type storedFrom int

func toStoredFrom(f ConsumeFrom) storedFrom {
	switch f.resolve() {
	case ConsumeFromLatest:
		return 0
	case ConsumeFromTimestamp:
		return 2
	}
	return 1
}

func (s storedFrom) consumeFrom() ConsumeFrom {
	switch s {
	case 0:
		return ConsumeFromLatest
	case 2:
		return ConsumeFromTimestamp
	}
	return ConsumeFromEarliest
}

// Subscription is one topic and the tag expression a group consumes it with.
type Subscription struct {
	// Topic is the topic to consume.
	Topic string
	// Filter selects messages by tag: "*" or "" for all, "A || B" for
	// either tag (see ValidateFilter).
	Filter string
}

// JoinRequest asks to add Member to Group.
type JoinRequest struct {
	// Group is the consumer group to join; it is created on first join.
	Group string
	// Member is the member ID, unique among the group's live members: 1 to
	// 255 bytes without a NUL byte (ErrInvalidArgument otherwise).
	Member string
	// Model is Clustering or Broadcasting; it must match the group's.
	Model MessageModel
	// Subscriptions must match the group's (ErrSubscriptionMismatch).
	Subscriptions []Subscription
	// From and FromTime apply to queues the group has no offset for; the
	// zero value (ConsumeFromDefault) means ConsumeFromEarliest.
	From ConsumeFrom
	// FromTime is the start time when From is ConsumeFromTimestamp.
	FromTime time.Time
	// Strategy names the allocation strategy (package allocate); "" means "average".
	Strategy string
	// Incarnation is a token unique to one consumer of the member ID (its
	// Starts after a failed one keep it). A join with
	// the member ID of a live member of another incarnation is refused with
	// ErrMemberIDInUse, and a join of an incarnation that left the group
	// (LeaveRequest) within the last SessionTimeout with ErrNotMember: it
	// was sent before the leave and arrived after it. Empty means no check
	// (clients that predate it).
	Incarnation string
}

// Grant is a queue a member may consume, under the epoch it was granted in.
// Pulls and commits carry the epoch; a stale one is refused with ErrFenced.
type Grant struct {
	QueueRef
	// Epoch is the group epoch the queue was granted in.
	Epoch int64
}

// Assignment is a member's view of its group.
type Assignment struct {
	// Group is the group name.
	Group string
	// Member is the member this assignment belongs to.
	Member string
	// Epoch rises on every membership or queue change of the group; the
	// answer carries the epoch of when it was made.
	Epoch int64
	// Version changes with every change of this member's answer: its
	// Queues, Revoking, Pending or Priorities, or its grants' epochs. It is
	// the group's change counter at the last such change, so it never
	// repeats within the group; a change that leaves this member's answer
	// as it was (another member joining, leaving or handing over) does not
	// move it, nor answer its held heartbeat.
	Version int64
	// Queues are the queues the member owns now.
	Queues []Grant
	// Pending counts queues allocated to the member that their previous
	// owner has not released yet.
	Pending int
	// Revoking lists queues the member still holds but must hand over: it
	// stops consuming them, commits and releases them (ReleaseQueues).
	Revoking []Grant
	// Priorities maps each subscribed topic with priority lanes to its lane
	// count (TopicOptions.Priorities); topics without lanes are absent.
	// Shared: callers must not change it.
	Priorities map[string]int
	// SessionTimeout is how long the engine keeps the member without a
	// heartbeat (Options.SessionTimeout), counted from its receipt: a
	// member that cannot reach the engine for that long may have lost
	// its queues. JoinGroup and Heartbeat answers carry it; zero means
	// unknown (a server of a version before it sends none).
	SessionTimeout time.Duration
	// MaxPullWait is the longest the engine holds a pull waiting for
	// messages (Options.MaxPullWait): a pull that asks to wait longer is
	// answered by then. JoinGroup and Heartbeat answers carry it, so that
	// a client over the network can give up on a long-poll whose answer
	// is overdue; zero means unknown (a server of a version before it
	// sends none).
	MaxPullWait time.Duration
}

// HeartbeatRequest keeps a member alive and waits for assignment changes.
type HeartbeatRequest struct {
	// Group is the member's group.
	Group string
	// Member is the member ID.
	Member string
	// KnownVersion is the Assignment.Version the member holds; the heartbeat
	// answers at once when the member's version differs (zero: always).
	KnownVersion int64
	// Wait is how long the heartbeat may wait for a change of the
	// assignment (long-poll); 0 answers at once.
	Wait time.Duration
	// Incarnation is the token the member joined with; a heartbeat of
	// another incarnation of the member ID gets ErrNotMember. Empty means
	// no check.
	Incarnation string
}

// OffsetCommit is the next offset to consume of one granted queue.
type OffsetCommit struct {
	Grant
	// Offset is the next offset to consume: every message below it is done.
	Offset int64
	// Attempts lists handler runs already made on unfinished messages at
	// or above Offset, and the messages above Offset already finished,
	// lowest offset first, at most MaxCommitAttempts entries. Orderly and
	// broadcasting consumers retry such messages in place; storing their
	// counts with the offset lets MaxAttempts hold across a close and
	// restart, and storing which later messages are done keeps a restart
	// from handling them again. A commit replaces the stored list.
	Attempts []MessageAttempts
}

// MessageAttempts is how many times the message at Offset was handled, or
// that it is done.
type MessageAttempts struct {
	// Offset is the message's offset in the committed queue.
	Offset int64
	// Attempts counts its handler runs so far (ignored when Done).
	Attempts int
	// Done marks a message above the commit's Offset that is finished
	// (handled, sent back or dead-lettered) while one below it is not, such
	// as a broadcasting member's message waiting for a local retry: a
	// member resuming from the commit skips it instead of handling it
	// again.
	Done bool
}

// MaxCommitAttempts is the most Attempts entries one OffsetCommit may carry.
const MaxCommitAttempts = 1024

// LeaveRequest asks to remove Member from Group.
type LeaveRequest struct {
	// Group is the member's group.
	Group string
	// Member is the member ID to remove.
	Member string
	// Incarnation is the token the member joined with: a leave of another
	// incarnation of the member ID (one that was replaced) gets
	// ErrNotMember and removes no member. Either way a join of this
	// incarnation is refused for SessionTimeout after the leave. Empty
	// means no check.
	Incarnation string
}

// CommitRequest commits offsets of queues Member owns.
type CommitRequest struct {
	// Group is the member's group.
	Group string
	// Member is the committing member; it must own every queue it commits
	// under the grant's epoch (ErrFenced otherwise).
	Member string
	// Offsets are the queues' new committed offsets, stored in one write.
	Offsets []OffsetCommit
	// Incarnation is the token the member joined with
	// (JoinRequest.Incarnation): a commit of another incarnation of the
	// member ID (one that expired or left, its ID taken by a new Start)
	// gets ErrNotMember and stores nothing, so that it cannot move that
	// incarnation's offsets. Empty means no check (clients that predate
	// it).
	Incarnation string
}

// compareRefs orders queue refs by topic, then queue.
func compareRefs(a, b QueueRef) int {
	if c := strings.Compare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Queue, b.Queue)
}

// sortRefs sorts refs by topic, then queue.
func sortRefs(refs []QueueRef) { slices.SortFunc(refs, compareRefs) }

// hasRef reports whether refs, sorted by sortRefs, holds q.
func hasRef(refs []QueueRef, q QueueRef) bool {
	_, found := slices.BinarySearchFunc(refs, q, compareRefs)
	return found
}
