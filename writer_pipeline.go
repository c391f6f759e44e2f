package equeue

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue/store"
)

// The completer: the second half of the writer. The writer hands it every
// batch it wrote (or failed to write), in order; the completer waits for
// the batch's outcome — one Sync for every batch waiting when it starts, or
// a replicated store's answer — then publishes the batch to readers and
// completes its commands. Batches complete strictly in write order, so a
// caller is never acknowledged before an earlier batch's outcome is known.

// pipeDepth is how many written batches may wait for the completer
// beyond the group it is completing: with the one the writer holds while
// it waits for room, at most pipeDepth+2 batches are in flight. Alternated
// A/B runs of the cluster benchmarks did no worse with 1 than with 4, and
// Raft entries stayed larger.
const pipeDepth = 1

// asyncPipeDepth is pipeDepth on an AsyncWriter (a replicated store): at
// most two group commits replicate at once. Each is one Raft entry that
// every node fsyncs, so fewer, larger entries cost fewer fsyncs per
// message. Interleaved runs of cluster.BenchmarkRatio (three nodes on one
// disk, 64 senders): 32–35 messages per entry instead of 22–24, 11–17% less
// CPU per message, and the Send ratio 0.36–0.42 against 0.34–0.40.
const asyncPipeDepth = 0

// AsyncWriter is an optional capability of a Store whose writes take long
// to become stored, such as a replicated store: WriteAsync queues b behind
// every write queued before it and returns without waiting; wait reports
// the write's outcome as Write would, and Sync is not needed after it.
//
// The engine writes its next batch before an earlier one's wait returned,
// assuming the earlier one will be stored. A store implementing it must
// therefore store a prefix of its writes: once a write fails, it refuses
// every later one (their waits return errors) until it is reopened.
type AsyncWriter interface {
	// WriteAsync queues b and returns the wait for its outcome; wait is
	// called once, in the order of the writes.
	WriteAsync(b *store.Batch) (wait func() error)
}

// WriteAdmitter is implemented by a store that can refuse a write before
// it makes it, with an error the engine passes on as "not stored": a
// replicated store whose leader's disk is nearly full (package cluster)
// refuses with store.ErrNoSpace instead of proposing a write its nodes may
// not have the room to apply. The writer asks before each write; a
// refused batch is answered with the error, and the engine's memory stays
// as it was, as for a failed Write.
type WriteAdmitter interface {
	// AdmitWrite returns nil when b may be written, or why not.
	AdmitWrite(b *store.Batch) error
}

// flight is one written batch on its way to completion.
type flight struct {
	batch []*command
	b     *batchState
	err   error        // the store refused the write: nothing of it is stored
	wait  func() error // an AsyncWriter's outcome of the write, or nil
	// settle is the completer's count of synced groups when the batch was
	// handed over (writer_cohort.go).
	settle int64
	// waiters counts the commands of the batch whose callers wait for it
	// (command.waits): the senders that may come back as a cohort. The
	// writer counts them while it owns the commands; once completed, a
	// command may be reused at once.
	waiters int
}

// pipeline is the completer's state.
type pipeline struct {
	flights  chan *flight
	inflight atomic.Int32 // batches handed to the completer and not yet completed
	syncs    atomic.Int64 // Sync calls made by the completer
	writes   atomic.Int64 // store writes made by the writer
	// lingerExpiries counts the writer's lingers that ran out before the
	// senders it waited for came.
	lingerExpiries atomic.Int64
	// senderYields counts the writer's yields in letSendersBack.
	senderYields atomic.Int64
	// syncNanos and writeNanos add up the time spent in the store's Sync
	// and (synchronous) Write calls: benchmarks split a group commit's
	// cycle with them.
	syncNanos  atomic.Int64
	writeNanos atomic.Int64
	// syncObserver, when set (by benchmarks), is told every Sync's duration.
	syncObserver atomic.Pointer[func(time.Duration)]
	// building is set while the writer gathers, writes and hands over a
	// batch; joining is set while the completer waits for that batch to
	// share its Sync (see joinBuilding).
	building atomic.Bool
	joining  atomic.Bool
	syncTime atomic.Int64 // recent Sync duration in ns (moving average)
	// writeTime is the recent store Write duration in ns (moving average).
	writeTime atomic.Int64
	// cohort is how many waiting senders (command.waits) the completer's
	// last Sync acknowledged: those the writer may expect back together.
	cohort  atomic.Int32
	settles atomic.Int64 // Syncs made, counted before their senders are completed (writer_cohort.go)
	// asyncFailed is the first failed AsyncWriter write: memory counts
	// that batch, so nothing completed after it may rest on it.
	asyncFailed atomic.Pointer[error]
}

// startCompleter starts the completer and returns the function that, once
// the writer wrote its last batch, lets the completer finish and waits.
func (e *Engine) startCompleter() (stop func()) {
	depth := pipeDepth
	if _, async := e.st.(AsyncWriter); async {
		depth = asyncPipeDepth
	}
	e.pipe.flights = make(chan *flight, depth)
	var wg sync.WaitGroup
	wg.Go(e.runCompleter)
	return func() {
		close(e.pipe.flights)
		wg.Wait()
	}
}

func (e *Engine) runCompleter() {
	var (
		group  []*flight
		cohort cohortBackoff
	)
	for f := range e.pipe.flights {
		// Take every batch already written: one Sync covers them all.
		group = append(group[:0], f)
	gather:
		for {
			select {
			case g, ok := <-e.pipe.flights:
				if !ok {
					break gather
				}
				group = append(group, g)
			default:
				break gather
			}
		}
		if slices.ContainsFunc(group, needsSync) {
			group = e.joinBuilding(e.awaitCohort(group, &cohort))
		}
		synced, syncErr := false, error(nil)
		for _, f := range group {
			if needsSync(f) && !synced {
				// Every batch of the group was written before this call.
				began := time.Now()
				synced, syncErr = true, e.syncStore()
				e.pipe.syncs.Add(1)
				took := time.Since(began)
				e.pipe.syncNanos.Add(int64(took))
				e.pipe.syncTime.Store((3*e.pipe.syncTime.Load() + int64(took)) / 4)
				if obs := e.pipe.syncObserver.Load(); obs != nil {
					(*obs)(took)
				}
				// The cohort this Sync acknowledges is published before any
				// of its senders is completed: one that comes back at once
				// must find the writer's target already set by it, not by
				// the Sync before (the writer would linger for senders that
				// never come).
				e.pipe.cohort.Store(int32(syncedWaiters(group)))
				e.pipe.settles.Add(1)
			}
			e.complete(f, syncErr)
			e.pipe.inflight.Add(-1)
		}
		clear(group)
	}
}

// joinBuilding lets the batch the writer is building share the Sync that
// group is about to make. Senders acknowledged by one Sync come back
// together; if some were still queued when it started, they would be
// written and synced on their own while the rest waited, and the two
// halves would keep taking turns, each paying a whole fsync. So while
// the writer is building a batch (or has commands queued) the completer
// waits for it — at most as long as a recent Sync took, which is what the
// batch would wait for on its own, and the writer stops lingering for more
// senders meanwhile — and syncs both at once.
func (e *Engine) joinBuilding(group []*flight) []*flight {
	if (!e.pipe.building.Load() && len(e.writeCh) == 0) || !e.waitingPays() {
		return group
	}
	e.pipe.joining.Store(true)
	defer e.pipe.joining.Store(false)
	select { // cut a lingering writer short
	case e.lingerWake <- struct{}{}:
	default:
	}
	timer := time.NewTimer(time.Duration(e.pipe.syncTime.Load()))
	defer timer.Stop()
	for e.pipe.building.Load() || len(e.writeCh) > 0 {
		select {
		case f, ok := <-e.pipe.flights:
			if !ok {
				return group
			}
			group = append(group, f)
		case <-timer.C:
			return group
		}
	}
	return group
}

// waitingPays reports whether the completer should wait for a batch to
// share its Sync: only while writes take less time than a Sync. Otherwise
// (large batches) overlapping the Sync with the next write does better
// than syncing both at once.
func (e *Engine) waitingPays() bool {
	return e.pipe.writeTime.Load() < e.pipe.syncTime.Load()
}

// syncedWaiters counts the waiting senders of the batches of group that
// its Sync covers.
func syncedWaiters(group []*flight) int {
	n := 0
	for _, f := range group {
		if needsSync(f) {
			n += f.waiters
		}
	}
	return n
}

// needsSync reports whether the completer syncs for f: a written batch
// that asks for it, or a refused one holding a duplicate of earlier
// writes that asks for it (batchState.dupSync).
func needsSync(f *flight) bool {
	if f.wait != nil {
		return false
	}
	if f.err != nil {
		return f.b.dupSync
	}
	return f.b.needSync
}

// complete settles f once its write's outcome is known: syncErr is the
// result of the Sync that covers it (when it needs one).
func (e *Engine) complete(f *flight, syncErr error) {
	err := f.err
	// earlierFailed is the outcome of the writes before f that a duplicate
	// in f names (see below): the first AsyncWriter write that failed
	// before f's, or nil when every one was stored.
	var earlierFailed *error
	if err == nil && f.wait != nil {
		earlierFailed = e.pipe.asyncFailed.Load()
		if err = f.wait(); err != nil {
			// The store refuses every later write: memory, which already
			// counts this batch, is never used to write again.
			e.log.Error("write failed", "messages", len(f.b.entries), "err", err)
			failed := err // on the heap only here, not for every batch
			e.pipe.asyncFailed.CompareAndSwap(nil, &failed)
		}
	} else if err == nil {
		err = e.asyncFailedOutcome()
	}
	if err == nil {
		switch stopped := e.StoreFailure(); {
		case f.b.needSync && f.wait == nil && syncErr != nil:
			e.durableBatch(f.b, false)
			err = fmt.Errorf("%w: %w", ErrIndeterminate, syncErr)
		case stopped != nil && f.wait == nil:
			// Written before the failed fsync was known: it may have been
			// swept into it, so no later fsync vouches for it (storefailure.go).
			e.durableBatch(f.b, false)
			err = fmt.Errorf("%w: written before a failed fsync: %w", ErrIndeterminate, stopped)
		default:
			e.durableBatch(f.b, true)
		}
	}
	for _, c := range f.batch {
		switch {
		case c.kind == cmdBarrier || c.err != nil:
		case f.err != nil && c.duplicate && !c.dupInBatch:
			// The write was refused, but this duplicate names messages
			// earlier writes stored: answering it with the refusal ("not
			// stored") would contradict them. It is answered as in a
			// batch with nothing to write.
			c.err = e.earlierOutcome()
			if c.err == nil && c.sync && syncErr != nil {
				c.err = fmt.Errorf("%w: %w", ErrIndeterminate, syncErr)
			}
		case f.err == nil && f.wait != nil && err != nil && c.duplicate && !c.dupInBatch:
			// The AsyncWriter write failed (or was refused), but this
			// duplicate names messages of earlier writes, whose outcome
			// is known by now (they complete in order): stored, or
			// unknown after one of them failed. The write's own error,
			// which may say "not stored", would contradict a stored one.
			c.err = nil
			if earlierFailed != nil {
				c.err = fmt.Errorf("%w: after a failed write: %w", ErrIndeterminate, *earlierFailed)
			}
		case err != nil:
			// A duplicate may refer to a message of this very batch: it shares
			// the batch's outcome.
			c.err = err
		case c.duplicate:
		case c.kind == cmdAppend || c.kind == cmdMove:
			// Counted here, with the outcome: QueueStats' Appended and
			// AppendedBytes count the messages reported stored, never those
			// of a failed fsync or write (ErrIndeterminate).
			c.q.appended.Add(uint64(len(c.recs)))
			c.q.appendedBytes.Add(uint64(c.recordBytes()))
			if !c.trimsAfter {
				e.kickTrim(c.q.topic) // a topic over its drop-oldest limit
			}
		}
		c.complete()
	}
}

// asyncFailedOutcome is the error of a batch with nothing to write
// (duplicates) after a failed AsyncWriter write, or nil: a duplicate may
// refer to a message of the failed batch, which memory counts, so its
// outcome is unknown too.
func (e *Engine) asyncFailedOutcome() error {
	if p := e.pipe.asyncFailed.Load(); p != nil {
		return fmt.Errorf("%w: after a failed write: %w", ErrIndeterminate, *p)
	}
	return nil
}

// earlierOutcome is the outcome of a duplicate of messages stored by
// earlier writes only, as complete gives it to a batch with nothing to
// write: nil (a duplicate), or ErrIndeterminate when an earlier write may
// not be stored (a failed AsyncWriter write, a failed fsync).
func (e *Engine) earlierOutcome() error {
	if err := e.asyncFailedOutcome(); err != nil {
		return err
	}
	if stopped := e.StoreFailure(); stopped != nil {
		return fmt.Errorf("%w: written before a failed fsync: %w", ErrIndeterminate, stopped)
	}
	return nil
}
