package equeue

import (
	"errors"
	"fmt"

	"github.com/equeue-go/equeue/store"
)

// Sentinel errors. Match them with errors.Is: the engine wraps them with the
// topic, queue or value at fault.
var (
	// ErrClosed is returned when the engine, producer or consumer is closed.
	ErrClosed = errors.New("equeue: closed")
	// ErrLocked is returned by Open when another open engine holds the directory.
	ErrLocked = store.ErrLocked
	// ErrNoSpace is returned (wrapped) by a send, commit or admin change
	// that the Badger store refused because its file system is nearly
	// full (store.BadgerOptions.MinFreeBytes): nothing of it was stored,
	// and it may be retried once space is freed. Offset commits, retention
	// and topic deletion go on longer than sends, so that consumers and
	// deletions can free space. Open returns it when the disk is fuller
	// still (less than a quarter of the reserve free).
	ErrNoSpace = store.ErrNoSpace
	// ErrInvalidOptions is returned when Options or per-client options fail Validate.
	ErrInvalidOptions = errors.New("equeue: invalid options")
	// ErrInvalidName is returned for a topic or group name that is not 1-127
	// characters of [A-Za-z0-9._-], or that uses a reserved prefix.
	ErrInvalidName = errors.New("equeue: invalid name")
	// ErrInvalidArgument is returned for any other argument out of its documented range.
	ErrInvalidArgument = errors.New("equeue: invalid argument")
	// ErrTopicNotFound is returned when a topic does not exist and auto-create is off.
	ErrTopicNotFound = errors.New("equeue: topic not found")
	// ErrTopicExists is returned by CreateTopic when the topic already exists.
	ErrTopicExists = errors.New("equeue: topic already exists")
	// ErrQueueNotFound is returned when a queue ID is outside the topic's queues.
	ErrQueueNotFound = errors.New("equeue: queue not found")
	// ErrQueueNotWritable is returned when a message is sent to a queue closed to producers.
	ErrQueueNotWritable = errors.New("equeue: queue closed to producers")
	// ErrMessageTooLarge is returned when an encoded message exceeds MaxMessageSize.
	ErrMessageTooLarge = errors.New("equeue: message too large")
	// ErrBatchTooLarge is returned, before anything is queued, when one append
	// (its records with their dedup entries or delay index keys) cannot fit
	// in one store write.
	ErrBatchTooLarge = errors.New("equeue: batch too large")
	// ErrInvalidFilter is returned for a malformed tag expression.
	ErrInvalidFilter = errors.New("equeue: invalid tag filter")
	// ErrCorrupt is returned or reported when a stored record fails its checksum or cannot be decoded.
	ErrCorrupt = errors.New("equeue: corrupt record")
	// ErrGroupNotFound is returned by admin calls on a group the engine does not know.
	ErrGroupNotFound = errors.New("equeue: group not found")
	// ErrNotMember is returned when a consumer ID is not (or no longer) a member of its group,
	// for example after its session expired, to a join of an incarnation
	// that left its group (a join sent before its leave, arriving after it),
	// and to a heartbeat, leave or commit of an incarnation that another
	// one of the member ID replaced (its commit stores nothing).
	ErrNotMember = errors.New("equeue: not a group member")
	// ErrMemberIDInUse is returned when a consumer joins with the member ID of
	// another live incarnation (another Start); that incarnation is gone, and
	// the ID free again, once it left its group or its session expired.
	ErrMemberIDInUse = errors.New("equeue: member ID in use by a live consumer")
	// ErrFenced is returned for a pull or commit that carries a stale epoch or a
	// queue the caller no longer owns.
	ErrFenced = errors.New("equeue: stale epoch or queue not owned")
	// ErrSubscriptionMismatch is returned when a consumer joins a group whose
	// members subscribe to different topics, tag filters or message model.
	ErrSubscriptionMismatch = errors.New("equeue: subscription differs from the group's")
)

// ErrInvalidDelay is returned for a negative delay or TTL, a delivery
// time beyond Options.MaxDelay, an expiry not after the delivery, or a
// delayed append (a batch) whose delivery times go back.
var ErrInvalidDelay = errors.New("equeue: invalid delay")

// ErrIndeterminate is returned when the outcome of a write is unknown: the
// store took it but making it durable failed (an fsync error), or the
// write was in flight when an fsync failed. The engine keeps what was
// written (its offsets are never reused, its dedup entries stay) and
// writes nothing more until it is reopened (ErrStoreFailed); a crash may
// lose it. Retry with the same message IDs on a topic with a dedup window
// to store a message at most once.
//
// A write whose caller's context ended after the engine took it (queued
// for its writer, or being written) is unknown too: the writer may still
// store it. Its error matches ErrIndeterminate and the context's error; a
// context that ended before the engine took the write gives the context's
// error alone, and nothing was stored.
var ErrIndeterminate = errors.New("equeue: outcome unknown")

// ErrGoexit is returned (by a SendAsync's future) when a call the
// producer made for the send never returned because it called
// runtime.Goexit, as testing's t.FailNow does, which recover cannot stop.
// One to the broker's Route or to the QueueSelector, on a goroutine of
// the producer's, had not sent the message: nothing was stored. One in
// the broker's Append (on a goroutine of the producer's) or AppendAsync
// (also on the caller's) may have stored it: its error matches
// ErrIndeterminate too. An AppendAsync that panics on the caller's
// goroutine gives ErrIndeterminate alone.
var ErrGoexit = errors.New("equeue: a call for the send did not return (runtime.Goexit)")

// queuedUnknown is the error of a write whose caller's context ended
// (ctxErr) after the engine took it: see ErrIndeterminate.
func queuedUnknown(ctxErr error) error {
	return fmt.Errorf("%w: the write was taken when its context ended: %w", ErrIndeterminate, ctxErr)
}

// ErrStoreFailed is returned for a write refused because an earlier fsync
// of the store failed: nothing of it was stored. After a failed fsync the
// engine writes nothing more until it is closed and opened again (see
// Engine.StoreFailure); Close and Open, then retry.
var ErrStoreFailed = errors.New("equeue: store failed an fsync; reopen the engine")

// ErrNotLeader is returned when a node of a replicated cluster (package
// cluster) is asked to write or read while it is not the leader, or while
// leadership is changing. Nothing was done: retry on the leader, whose
// client address the error carries when it is known (cluster.NotLeaderError).
var ErrNotLeader = errors.New("equeue: not the cluster leader")

// ErrTopicFull is returned when a send would take a topic past its
// TopicLimits.MaxMessages under OverflowReject. Nothing of the send was
// stored.
var ErrTopicFull = errors.New("equeue: topic full")

// ErrPartialDuplicate is returned for an append to a topic with a dedup
// window that holds some of the append's message IDs but not all, or all
// but not as one append stored them (in one queue, at consecutive offsets,
// in this order): storing it would store the IDs held a second time, and
// no one position (AppendResult.FirstOffset) answers for them. Nothing was
// stored; send the messages whose IDs are new in an append of their own.
var ErrPartialDuplicate = errors.New("equeue: the dedup window holds the append's message IDs in part")

// ErrHandlerPanic wraps a panic recovered from a message handler.
var ErrHandlerPanic = errors.New("equeue: handler panicked")

// ErrSelectorPanic is returned when a producer's QueueSelector panicked
// while choosing a queue for a send: the panic is recovered and wrapped,
// with its value and stack, and nothing of the send was stored.
var ErrSelectorPanic = errors.New("equeue: queue selector panicked")

// ErrHookPanic is returned, or logged, when a Hooks or TraceHooks function
// panicked on a goroutine of the engine, producer or consumer: the panic is
// recovered and wrapped, with its value and stack. A SendAsync's future
// returns it joined to the send's own error, with the send's SendResult,
// which is filled in when the message was stored; a Consumer logs it (see
// Hooks). A send's trace end gets it when a hook on the caller's goroutine
// panicked, or called runtime.Goexit, before the send returned.
var ErrHookPanic = errors.New("equeue: hook panicked")

// ErrCloseUnfinished is returned by Engine.Close and Engine.CloseContext,
// and by a cluster node's, once their close stopped before it finished: it
// panicked (a Store of the program's own whose Sync or Close panics, or a
// node's OnEngine), the panic going on in the goroutine that ran it. What
// the close had not reached yet was left as it was: the store may be
// neither synced nor closed, and a node's Raft neither shut down nor
// released. A close that stopped so is never run again.
var ErrCloseUnfinished = errors.New("equeue: close unfinished")

// ErrHandlerAbandoned is returned (wrapped, with the queues) by a
// Consumer's Close or CloseContext, and so by Engine.Close, when a handler
// was still running after both of the drain's waits (ShutdownTimeout
// each): Close returned without it. Its message was not committed and is
// delivered again, to this group's next owner of the queue (maybe while
// the handler still runs); its result is ignored, and no later commit of
// the closed consumer moves the group past it, with one exception: when
// the CloseContext that reported it was cut by its own context before its
// final commit was answered, and Engine.Close, closing the consumer
// beside it, does that commit again, a handler that returned success by
// then has its message committed there. Engine.Close does not report the
// handlers of such a close again: its caller was told.
var ErrHandlerAbandoned = errors.New("equeue: handler still running after the close's drain")

// ErrJoinRefused is matched, beside the error that says why, by the error
// of a JoinGroup that the broker refused: it added no member, so a
// Consumer's or PullConsumer's Start that gets it sends no leave, unless
// its incarnation is one an earlier Start kept after a join whose answer
// was lost (that join's member may still be there). A failed
// join whose error does not match it may have added the member (its answer
// lost on the way, say), and Start leaves for it. A Broker of the
// program's own marks its refusals with it, or gets a leave after each.
var ErrJoinRefused = errors.New("equeue: join refused")
