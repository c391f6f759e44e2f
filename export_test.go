package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/equeue-go/equeue/store"
)

// CrashConsumer stops c as a killed process would: no commit, no leave.
func CrashConsumer(c *Consumer) { c.crash() }

// AppendInternal appends as the engine does to its own %RETRY%/%DLQ%
// topics, which clients may not write; tests use it to set up state.
func AppendInternal(ctx context.Context, e *Engine, req *AppendRequest) (AppendResult, error) {
	return e.Append(allowInternal(ctx, req.Topic), req)
}

// TraceSeamAllocs reports the allocations per run of the tracing seams of a
// send and of a handling attempt, with hooks h (that do not trace).
func TraceSeamAllocs(m *Message, h []Hooks) float64 {
	hooks := hookList(h)
	c := &Consumer{hooks: hooks}
	ctx := context.Background()
	batch := []*Message{m, m}
	return testing.AllocsPerRun(100, func() {
		sctx, send := hooks.traceSend(ctx, nil, m)
		send.one(SendResult{}, nil, nil)
		_, bend := hooks.startSend(sctx, nil, batch...)
		if bend != nil {
			panic("no trace hooks, yet an end")
		}
		hctx, end := c.traceHandle(ctx, m)
		end.end(HandleOutcome{Outcome: OutcomeHandled})
		_ = hctx
	})
}

// GroupCommitSyncs reports how many Syncs the writer's completer has made.
func GroupCommitSyncs(e *Engine) int64 { return e.pipe.syncs.Load() }

// SetGroupCommitLinger changes how long e's writer waits for returning
// senders, and its completer for a batch to share a Sync.
func SetGroupCommitLinger(e *Engine, d time.Duration) { e.linger.Store(int64(d)) }

// SetSenderYieldsOff changes how long e's writer stops yielding to the
// senders it completed after a yield that took too long.
func SetSenderYieldsOff(e *Engine, d time.Duration) { e.yieldsOff.Store(int64(d)) }

// SenderYields reports how often e's writer yielded to the senders it
// completed itself.
func SenderYields(e *Engine) int64 { return e.pipe.senderYields.Load() }

// SetGroupCommitLingerCap changes how long, at most, e's writer waits for
// returning senders when Syncs take longer than its linger.
func SetGroupCommitLingerCap(e *Engine, d time.Duration) { e.lingerCap.Store(int64(d)) }

// StoreTimes reports the time e's writer and completer spent in the
// store's Write and Sync calls.
func StoreTimes(e *Engine) (write, sync time.Duration) {
	return time.Duration(e.pipe.writeNanos.Load()), time.Duration(e.pipe.syncNanos.Load())
}

// StoreWrites reports how many store writes e's writer has made.
func StoreWrites(e *Engine) int64 { return e.pipe.writes.Load() }

// LingerExpiries returns how many of e's writer lingers ran out before the
// senders it waited for came.
func LingerExpiries(e *Engine) int64 { return e.pipe.lingerExpiries.Load() }

// ObserveSyncs has f told the duration of every Sync e's completer makes.
func ObserveSyncs(e *Engine, f func(time.Duration)) { e.pipe.syncObserver.Store(&f) }

// SetMarksSweepEvery sets how often e drops the pull marks of members
// that are gone.
func SetMarksSweepEvery(e *Engine, d time.Duration) { e.marksSweep.Store(int64(d)) }

// PullMarks returns how many pull marks e holds.
func PullMarks(e *Engine) int { return e.marks.size() }

// QueuedCommands returns how many commands wait in e's writer queue.
func QueuedCommands(e *Engine) int { return len(e.writeCh) }

// HoldGroupCommits holds the commit lock of group name, as an offset
// commit in progress does, until the returned function runs.
func HoldGroupCommits(e *Engine, name string) (release func()) {
	g, err := e.groups.group(name)
	if err != nil {
		panic(err)
	}
	g.commitMu.Lock()
	return g.commitMu.Unlock
}

// StoreOffsetUnchecked stores off as group's committed offset of q as it
// is, past the queue's end too, as releases before CommitOffsets refused
// one did; the engine reads it at its next Open.
func StoreOffsetUnchecked(e *Engine, group string, q QueueRef, off int64) error {
	_, err := e.storeMeta(store.MetaOp{Key: offsetMetaKey(group, offsetKey{q: q}), Value: offsetValue(off, nil)})
	return err
}

// ApplyRetentionAt is ApplyRetention as if it ran at now: p.MaxAge counts
// back from now, so tests tell old from young messages without waiting.
func ApplyRetentionAt(ctx context.Context, e *Engine, p RetentionPolicy, now time.Time) (RetentionResult, error) {
	return e.applyRetention(ctx, p, now)
}

// OnDeleteGroupTopics sets f to run when DeleteGroup has deleted a group's
// keys and memory, before it deletes its topics; nil removes it.
func OnDeleteGroupTopics(e *Engine, f func(group string)) {
	if f == nil {
		e.groupTopicsHook.Store(nil)
		return
	}
	e.groupTopicsHook.Store(&f)
}

// OnRedriveOne sets f to run when a Redrive has checked its group and is
// about to send one of its dead letters back; nil removes it.
func OnRedriveOne(e *Engine, f func(group string)) {
	if f == nil {
		e.redriveHook.Store(nil)
		return
	}
	e.redriveHook.Store(&f)
}

// OnRedriveHeld sets f to run when a Redrive's send holds off the
// deletion of its group and dead-letter topic, before it queues its copy
// and mark; nil removes it.
func OnRedriveHeld(e *Engine, f func(group string)) {
	if f == nil {
		e.redriveHeldHook.Store(nil)
		return
	}
	e.redriveHeldHook.Store(&f)
}

// OnSendBackHeld sets f to run when a SendBack holds the gates that
// order it with the deletion of its group and of the group's topics,
// before it queues its copy and mark; nil removes it.
func OnSendBackHeld(e *Engine, f func(group string)) {
	if f == nil {
		e.sendBackHeldHook.Store(nil)
		return
	}
	e.sendBackHeldHook.Store(&f)
}

// NameGateRefs reports how many deletions, joins and sends hold or wait
// for the name gate of group name (groupdelete_gate.go).
func NameGateRefs(e *Engine, name string) int {
	e.groups.mu.Lock()
	defer e.groups.mu.Unlock()
	if g := e.groups.nameGates[name]; g != nil {
		return g.refs
	}
	return 0
}

// GroupDeletionWaits reports how many joins and commits wait for the end
// of a group's deletion to make the group again.
func GroupDeletionWaits(e *Engine) int64 { return e.groups.holdWaits.Load() }

// LostKeyPrefix is the prefix of the metadata keys that keep the queues'
// lost ranges (queuelost.go).
var LostKeyPrefix = keyLostPrefix

// ProducerRoutes returns how many topics' routes p keeps.
func ProducerRoutes(p *Producer) int {
	n := 0
	p.routes.Range(func(_, _ any) bool { n++; return true })
	return n
}

// RouteSweepMin exports routeSweepMin.
const RouteSweepMin = routeSweepMin

// OnDelayMoveParking sets f to run when the scheduler is about to park a
// move that no write of the store can hold, its topic looked up already;
// nil removes it.
func OnDelayMoveParking(e *Engine, f func()) {
	if f == nil {
		e.sched.parkHook.Store(nil)
		return
	}
	e.sched.parkHook.Store(&f)
}

// OnDelayMoveQueued sets f to run when the scheduler has registered the
// move of a due delayed message as in flight, before it queues it to the
// writer; nil removes it.
func OnDelayMoveQueued(e *Engine, f func()) {
	if f == nil {
		e.sched.queueHook.Store(nil)
		return
	}
	e.sched.queueHook.Store(&f)
}

// OnCutCloseRedo has f run in e.Close's redo of a consumer's cut close,
// once it found the member's session running and before it commits again
// (nil: nothing). Other engines' redos do not run it.
func OnCutCloseRedo(e *Engine, f func()) {
	if f == nil {
		e.cutRedoHook.Store(nil)
		return
	}
	e.cutRedoHook.Store(&f)
}

// CommittableOf returns a reader of the offset c's runner of q, as it is
// now, would commit: it stays readable after Close took the runner (0
// when c runs no such queue now).
func CommittableOf(c *Consumer, q QueueRef) func() int64 {
	c.mu.Lock()
	r := c.runners[q]
	c.mu.Unlock()
	return func() int64 {
		if r == nil {
			return 0
		}
		off, _ := r.pq.committableState()
		return off
	}
}

// RouteRetriesWaiting reports how many SendAsync calls of p that met a
// stale route wait for a goroutine to retry them.
func RouteRetriesWaiting(p *Producer) int {
	p.retries.mu.Lock()
	defer p.retries.mu.Unlock()
	return len(p.retries.queue) - p.retries.head
}
