package equeue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"time"
)

// BatchHandler processes up to ConsumerOptions.BatchSize messages of one
// queue at once, in offset order; a batch holds messages of one pull, so
// it is never larger than ConsumerOptions.PullBatch.
//
// Returning nil acknowledges every message of the batch. A *BatchError
// (also wrapped) fails only the messages it lists, and any other error (or
// a panic, which is recovered) fails them all. A failed message takes the
// failure path of a single message: it counts an attempt and goes to the
// retry topic, or to the dead letters after MaxAttempts (or for a
// DeadLetter error), exactly as with Handler; a message retried alone is
// handed to the BatchHandler in a batch of one.
//
// In orderly mode a batch succeeds up to its first failed message; that
// message and the rest of the batch are handled again, in order, after
// LocalRetryDelay (or the wait that message's RetryAfter asks for), so the
// queue's order holds. Only the failed ones count an attempt, and one whose
// attempts are spent (MaxAttempts, or a DeadLetter error) is not handled
// again: it is dead-lettered at its turn.
//
// msgs is the handler's own: it may filter or sort it in place.
//
// ctx follows the rules of Handler's context, and ConsumeTimeout applies to
// every message of a running batch as to a single message.
type BatchHandler func(ctx context.Context, msgs []*Message) error

// BatchError is a BatchHandler's per-message outcome: the messages at the
// indexes of Failed failed with their error, every other message of the
// batch is handled. An index is a message's place in the batch as it was
// handed to the handler, whatever the handler did with its slice since. An index outside the batch, or a nil error, is ignored;
// a nil *BatchError (returned where none was made) fails no message.
type BatchError struct {
	// Failed maps an index of the batch to that message's error.
	Failed map[int]error
}

// Error lists the failed indexes and their errors.
func (e *BatchError) Error() string {
	var failed map[int]error
	if e != nil {
		failed = e.Failed
	}
	var b strings.Builder
	fmt.Fprintf(&b, "equeue: %d messages of the batch failed", len(failed))
	for _, i := range slices.Sorted(maps.Keys(failed)) {
		fmt.Fprintf(&b, "; [%d]: %v", i, failed[i])
	}
	return b.String()
}

// validateBatch checks the batch options.
func (o *ConsumerOptions) validateBatch() error {
	if o.Handler != nil && o.BatchHandler != nil {
		return fmt.Errorf("%w: set Handler or BatchHandler, not both", ErrInvalidOptions)
	}
	if o.BatchSize < 0 || o.BatchSize > MaxPullBatch {
		return fmt.Errorf("%w: BatchSize %d not in 0..%d", ErrInvalidOptions, o.BatchSize, MaxPullBatch)
	}
	return nil
}

// dispatch hands pulled messages to the handlers: in order on the pull
// loop (orderly) or to the worker pool (concurrent), one by one or in
// batches of BatchSize. False when the runner stopped first.
func (r *runner) dispatch(msgs []*Message) bool {
	c := r.c
	size := 1
	if c.o.BatchHandler != nil {
		size = c.o.BatchSize
	}
	r.markPriority(msgs)
	if !c.o.Orderly && size == 1 && r.lane == nil {
		return c.submitRun(r, msgs, r.ctx.Done()) // the whole pull in one hand-over
	}
	first := true
	for chunk := range slices.Chunk(msgs, size) {
		// The first chunk of a pull probes the idle higher lanes of a
		// remote broker (see probeHigher); the next ones wait for what the
		// board says, as in process.
		if !r.laneTurn(first) {
			return false
		}
		if c.o.Orderly && r.ctx.Err() != nil {
			// Stopping: the drain waits for the running handler only, so
			// no other message of the pull begins (it stays uncommitted).
			return false
		}
		var ok bool
		switch {
		case c.o.Orderly:
			ok = r.handleInPlace(chunk, size)
		case size == 1:
			ok = c.submit(task{r: r, m: chunk[0]}, r.ctx.Done())
		default:
			ok = c.submit(task{r: r, batch: chunk}, r.ctx.Done())
		}
		if !ok {
			return false
		}
		first = false
	}
	return true
}

// handleInPlace handles chunk in orderly mode, on the pull loop: one
// message (size 1) or a batch. A hook or the handler that calls
// runtime.Goexit ends the pull loop there: the messages it left running
// are left unfinished (see leaveUnfinished), and the queue's next owner
// goes on from them.
func (r *runner) handleInPlace(chunk []*Message, size int) bool {
	finished := false
	defer r.leaveUnfinished(&finished, chunk...)
	var ok bool
	if size == 1 {
		ok = r.handleOrderly(chunk[0])
	} else {
		ok = r.handleOrderlyBatch(chunk)
	}
	finished = true
	return ok
}

// handleTask runs one task of the worker pool.
func (r *runner) handleTask(t task) {
	if t.batch != nil {
		r.handleBatch(t.batch)
		return
	}
	r.handleConcurrent(t.m)
}

// batchViews begins msgs (see processQueue.begin), skipping those that must
// not run, and returns them with the views their handler sees and the ends
// of their traces. A StartHandle that calls runtime.Goexit leaves those
// begun unfinished (see leaveUnfinished).
func (r *runner) batchViews(msgs []*Message) (begun, views []*Message, ends []handleEnd) {
	finished := false
	defer func() { r.leaveUnfinished(&finished, begun...) }()
	for _, m := range msgs {
		if !r.pq.begin(m.Offset) {
			continue
		}
		begun = append(begun, m)
		view := origin(m)
		_, end := r.c.traceHandle(r.hctx, view)
		views, ends = append(views, view), append(ends, end)
	}
	finished = true
	return begun, views, ends
}

// handleBatch runs the batch handler on msgs (concurrent mode); each
// message then finishes on its own, as one handled by Handler would.
func (r *runner) handleBatch(msgs []*Message) {
	begun, views, ends := r.batchViews(r.dropExpired(msgs))
	if len(begun) == 0 {
		return
	}
	finished := false
	defer r.leaveUnfinished(&finished, begun...)
	errs := r.invokeBatch(r.hctx, views)
	for i, m := range begun {
		r.finish(m, views[i], errs[i], ends[i])
	}
	finished = true
}

// handleOrderlyBatch handles msgs in place, in order, until each is done,
// dead-lettered or expired (see dropExpired); false when the runner
// stopped first. A message whose attempts are spent (MaxAttempts, or a
// DeadLetter error) behind the batch's first failure is not handled
// again: it is dead-lettered at its turn.
func (r *runner) handleOrderlyBatch(msgs []*Message) bool {
	spent := map[int64]spentRun{}
	defer func() { // stopped before their turn: they stay unfinished
		for _, s := range spent {
			s.end.end(HandleOutcome{Err: s.cause, Outcome: OutcomeUnfinished, Attempts: s.m.Attempt})
		}
	}()
	for len(msgs) > 0 {
		if s, ok := spent[msgs[0].Offset]; ok {
			delete(spent, msgs[0].Offset)
			done, stopped := r.deadLetterSpent(s)
			switch {
			case stopped:
				return false
			case done:
				msgs = msgs[1:]
				continue
			}
			// Not stored: handled again after the wait, as a single
			// orderly message whose dead letter failed is.
			if !sleepCtx(r.ctx, r.c.localDelay(s.cause)) {
				return false
			}
		}
		if !r.memberConfirmed() {
			return false // stopping: no new run begins (see dispatch)
		}
		run, later := msgs, []*Message(nil)
		if k := slices.IndexFunc(msgs, func(m *Message) bool { _, ok := spent[m.Offset]; return ok }); k >= 0 {
			run, later = msgs[:k], msgs[k:]
		}
		if live := r.dropExpired(run); len(live) < len(run) {
			msgs = append(live, later...) // live is a new slice
			continue
		}
		handled, cause, ok := r.runOrderlyBatch(run, spent)
		if !ok {
			return false
		}
		msgs = msgs[handled:]
		if cause == nil || spentHead(spent, msgs) {
			continue // the run succeeded, or its failed head is dead-lettered at once
		}
		if r.hctx.Err() != nil {
			return false // stopping: the messages stay uncommitted
		}
		if !sleepCtx(r.ctx, r.c.localDelay(cause)) {
			return false
		}
	}
	return true
}

// spentRun is the last run of a message of an orderly batch whose attempts
// are spent: m is dead-lettered with cause at its turn, which ends the
// trace of that run (end).
type spentRun struct {
	m, view *Message
	cause   error
	end     handleEnd
}

// spentHead reports whether the first of msgs is spent.
func spentHead(spent map[int64]spentRun, msgs []*Message) bool {
	if len(msgs) == 0 {
		return false
	}
	_, ok := spent[msgs[0].Offset]
	return ok
}

// runOrderlyBatch calls the batch handler once on run and records the
// outcome: the messages before the first failed one are done (handled
// counts them), the failed ones count an attempt, and those whose attempts
// it spends join spent. cause is the first failure, nil when every message
// succeeded; ok is false when the runner stopped (nothing ran, or the
// failures were not recorded).
func (r *runner) runOrderlyBatch(run []*Message, spent map[int64]spentRun) (handled int, cause error, ok bool) {
	begun, views, ends := r.batchViews(run)
	if len(begun) < len(run) {
		for i, m := range begun { // stopping: none of them runs
			ends[i].end(HandleOutcome{Outcome: OutcomeUnfinished, Attempts: m.Attempt + 1})
			r.pq.end(m.Offset, false)
		}
		return 0, nil, false
	}
	errs := r.invokeBatch(r.hctx, views)
	first := slices.IndexFunc(errs, func(err error) bool { return err != nil })
	if first < 0 {
		first = len(run)
	}
	for i, m := range run[:first] {
		ends[i].end(HandleOutcome{Outcome: OutcomeHandled, Attempts: m.Attempt + 1})
		r.pq.end(m.Offset, true)
	}
	rest, restViews, restErrs, restEnds := run[first:], views[first:], errs[first:], ends[first:]
	if len(rest) == 0 {
		return first, nil, true
	}
	// The failure path registers as disposing, as handleOrderly's does: a
	// drain that gives up meanwhile waits for the attempts to be counted
	// (and for a dead letter, see deadLetterSpent), so the final commit
	// holds them.
	if r.abandoned.Load() || !r.beginDispose() {
		r.endBatchRest(rest, restErrs, restEnds, OutcomeUnfinished, 0)
		return first, restErrs[0], false
	}
	var retried []int // the rest but the spent: handled again after the wait
	for i, m := range rest {
		if err := restErrs[i]; err != nil {
			// Every failed run counts, stored with the next commit.
			m.Attempt++
			r.pq.failed(m.Offset, m.Attempt)
			if m.Attempt >= r.c.o.MaxAttempts || errors.Is(err, ErrDeadLetter) {
				spent[m.Offset] = spentRun{m: m, view: restViews[i], cause: err, end: restEnds[i]}
				r.pq.end(m.Offset, false)
				continue
			}
		}
		retried = append(retried, i)
	}
	r.endDispose()
	out := outcomeIf(r.hctx.Err() == nil, OutcomeRetryLocal, OutcomeUnfinished)
	for _, i := range retried {
		restEnds[i].end(HandleOutcome{Err: restErrs[i], Outcome: out, Attempts: max(rest[i].Attempt, 1), Delay: r.c.localDelay(restErrs[0])})
		r.pq.end(rest[i].Offset, false)
	}
	return first, restErrs[0], true
}

// deadLetterSpent dead-letters the spent message of s at its turn. done:
// stored (or gone, see Consumer.deadLetter); stopped: the runner stopped
// (a drain gave up), and the message stays unfinished.
func (r *runner) deadLetterSpent(s spentRun) (done, stopped bool) {
	m := s.m
	if r.abandoned.Load() || !r.beginDispose() {
		s.end.end(HandleOutcome{Err: s.cause, Outcome: OutcomeUnfinished, Attempts: m.Attempt})
		return false, true
	}
	defer r.endDispose() // after the message is done (or not), so a drain's commit sees it
	done, gone := r.deadLetterNow(s.view, m.Attempt, s.cause)
	if !done {
		s.end.end(HandleOutcome{Err: s.cause, Outcome: OutcomeRetryLocal, Attempts: m.Attempt, Delay: r.c.localDelay(s.cause)})
		return false, false
	}
	s.end.end(HandleOutcome{Err: s.cause, Outcome: outcomeIf(gone, OutcomeDeleted, OutcomeDeadLetter), Attempts: m.Attempt})
	r.pq.end(m.Offset, true)
	return true, false
}

// endBatchRest ends the traces of the unfinished messages of an orderly
// batch, which stay in the process queue to be handled again after delay.
func (r *runner) endBatchRest(rest []*Message, errs []error, ends []handleEnd, out Outcome, delay time.Duration) {
	for i, m := range rest {
		ends[i].end(HandleOutcome{Err: errs[i], Outcome: out, Attempts: max(m.Attempt, 1), Delay: delay})
		r.pq.end(m.Offset, false)
	}
}

// invokeBatch calls the batch handler with hooks, turning a panic into an
// error, and returns each message's error. AfterHandle gets each message
// with its share of the call's time, so a batch's times add up to the
// call, as single messages' do: handler-time metrics would otherwise count
// a batch of n messages as n times the time its handler took.
func (c *Consumer) invokeBatch(ctx context.Context, msgs []*Message) []error {
	for _, m := range msgs {
		c.runHooks(m, "BeforeHandle", func() error { return c.hooks.beforeHandle(ctx, m) })
	}
	start := time.Now()
	// The handler gets a slice of its own: one it filters or sorts in
	// place (slices.DeleteFunc clears the tail) must not change which
	// message an index of the batch is, here and to the caller.
	err := c.callBatch(ctx, slices.Clone(msgs))
	took := time.Since(start) / time.Duration(max(len(msgs), 1))
	errs := make([]error, len(msgs))
	var be *BatchError
	switch {
	case err == nil:
	case errors.As(err, &be):
		if be == nil {
			break // a nil *BatchError lists no failed message
		}
		for i, ierr := range be.Failed {
			if i >= 0 && i < len(errs) {
				errs[i] = ierr
			}
		}
	default:
		for i := range errs {
			errs[i] = err
		}
	}
	for i, m := range msgs {
		if errs[i] != nil {
			c.failures.Add(1)
		} else {
			c.handled.Add(1)
		}
		c.runHooks(m, "AfterHandle", func() error { return c.hooks.afterHandle(ctx, m, errs[i], took) })
	}
	return errs
}

// callBatch calls the batch handler, turning a panic into an error.
func (c *Consumer) callBatch(ctx context.Context, msgs []*Message) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, p, debug.Stack())
		}
	}()
	return c.o.BatchHandler(ctx, msgs)
}
