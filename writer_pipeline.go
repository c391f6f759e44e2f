package equeue

import (
	"fmt"
	"sync"
	"sync/atomic"

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

// flight is one written batch on its way to completion.
type flight struct {
	batch []*command
	b     *batchState
	err   error        // the store refused the write: nothing of it is stored
	wait  func() error // an AsyncWriter's outcome of the write, or nil
}

// pipeline is the completer's state.
type pipeline struct {
	flights  chan *flight
	inflight atomic.Int32    // batches handed to the completer and not yet completed
	withheld []withheldQueue // stored after a failed sync, not yet published
}

// startCompleter starts the completer and returns the function that, once
// the writer wrote its last batch, lets the completer finish and waits.
func (e *Engine) startCompleter() (stop func()) {
	e.pipe.flights = make(chan *flight, pipeDepth)
	var wg sync.WaitGroup
	wg.Go(e.runCompleter)
	return func() {
		close(e.pipe.flights)
		wg.Wait()
	}
}

func (e *Engine) runCompleter() {
	var group []*flight
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
		synced, syncErr := false, error(nil)
		for _, f := range group {
			if needsSync(f) && !synced {
				// Every batch of the group was written before this call.
				synced, syncErr = true, e.st.Sync()
				if syncErr != nil {
					e.log.Error("sync failed; the batch is kept, its outcome reported unknown", "err", syncErr)
				}
			}
			e.complete(f, syncErr)
			e.pipe.inflight.Add(-1)
		}
		clear(group)
	}
}

func needsSync(f *flight) bool { return f.err == nil && f.wait == nil && f.b.needSync }

// complete settles f once its write's outcome is known: syncErr is the
// result of the Sync that covers it (when it needs one).
func (e *Engine) complete(f *flight, syncErr error) {
	err := f.err
	if err == nil && f.wait != nil {
		if err = f.wait(); err != nil {
			// The store refuses every later write: memory, which already
			// counts this batch, is never used to write again.
			e.log.Error("write failed", "messages", len(f.b.entries), "err", err)
		}
	}
	if err == nil {
		if f.b.needSync && f.wait == nil && syncErr != nil {
			e.durableBatch(f.b, false)
			err = fmt.Errorf("%w: %w", ErrIndeterminate, syncErr)
		} else {
			e.durableBatch(f.b, true)
		}
	}
	for _, c := range f.batch {
		switch {
		case c.kind == cmdBarrier || c.err != nil:
		case err != nil:
			// A duplicate may refer to a message of this very batch: it shares
			// the batch's outcome.
			c.err = err
		case c.duplicate:
		case c.kind == cmdAppend || c.kind == cmdMove:
			c.q.appendedBytes.Add(uint64(c.bytes))
			if !c.trimsAfter {
				e.kickTrim(c.q.topic) // a topic over its drop-oldest limit
			}
		}
		c.complete()
	}
}
