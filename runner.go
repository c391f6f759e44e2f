package equeue

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"
)

// runner consumes one owned queue: a pull loop feeding its process queue,
// and (in concurrent mode) the consumer's worker pool handling what it pulled.
type runner struct {
	c         *Consumer
	grant     Grant
	filter    string
	pq        *processQueue
	ctx       context.Context // cancelled to stop pulling
	cancel    context.CancelFunc
	hctx      context.Context // handlers' context: cancelled by Close, by abandon and when a drain ends
	hcancel   context.CancelFunc
	done      chan struct{}     // closed when the pull loop has returned for good (not parked)
	slot      *parkSlot         // set while parked; guarded by the consumer's parking.mu
	next      int64             // where the pull loop goes on; only the pull loop touches it
	lane      *laneSlot         // the priority lane this queue is (priority.go); nil without priorities
	probed    map[int]probeMark // how far its reads of idle higher lanes passed skipped records, by lane (priority_probe.go); only the pull loop touches it
	prev      []<-chan struct{} // orderly: done of the queue's fenced runners, waited for before the first pull; set by newRunner only
	prevDone  bool              // prev was waited for; only the pull loop touches it
	share     poolShare         // its tasks in the worker pool (concurrent mode)
	abandoned atomic.Bool       // fenced: nothing is committed, late handler results are ignored; set by abandon
	gaveUp    atomic.Bool       // a drain stopped waiting: late handler results are ignored; set by giveUp
	calls     atomic.Int64      // handler calls in progress, with callsGaveUp and callsAbandoned once set (markCalls)
	disposing atomic.Int32      // failure paths storing a send-back now (see beginDispose)
	committed atomic.Int64      // last offset committed, -1 before the first commit
	// committedAtts are the attempts stored with committed; guarded by
	// the consumer's commitMu.
	committedAtts []MessageAttempts
}

// newRunner starts at st, the queue's committed state.
func (c *Consumer) newRunner(g Grant, st OffsetCommit) *runner {
	pq := newProcessQueue(st)
	r := &runner{c: c, grant: g, filter: c.filters[g.Topic], pq: pq, done: make(chan struct{}), lane: c.laneSlotFor(g)}
	r.ctx, r.cancel = context.WithCancel(c.ctx)
	r.hctx, r.hcancel = context.WithCancel(c.hctx)
	r.committed.Store(st.Offset)
	_, r.committedAtts = pq.committableState()
	r.next = st.Offset
	if prev := c.fenced[g.QueueRef]; prev != nil { // c.mu is held
		delete(c.fenced, g.QueueRef)
		r.prev = pending(prev)
	}
	return r
}

// waitPrev waits, up to HandoffTimeout, for the pull loop (and so the
// running handler) of the queue's fenced orderly runner to return; false
// when r stops first.
func (r *runner) waitPrev() bool {
	if r.prevDone || len(r.prev) == 0 {
		return true
	}
	t := time.NewTimer(r.c.o.HandoffTimeout)
	defer t.Stop()
	for _, prev := range r.prev {
		select {
		case <-prev:
		case <-t.C:
			r.c.log.Warn("fenced orderly handler still running; starting the queue anyway", "queue", r.grant.QueueRef)
			return true
		case <-r.ctx.Done():
			return false
		}
	}
	return true
}

// drain stops pulling and starting handlers, and waits for the running
// ones: first with their context live for up to timeout, then with it
// cancelled for up to timeout more. A handler that fails, before or after
// the cancellation, is a counted attempt and goes through the normal failure
// path (retry topic or dead letters). Messages below the highest offset
// already running or finished (a concurrent pool finishes out of order) are
// handled first, so the committed offset passes every handled message; the
// rest stay uncommitted for the next owner. Only a handler still running
// after both waits is given up: its message stays uncommitted and its late
// result is ignored. A message whose handler returned ErrNotHandled once
// stopped is not handled again either (see processQueue.leave): it stays
// uncommitted, and the commit lists the messages above it already done
// (MessageAttempts.Done). In orderly mode the handler of a fenced runner of the
// queue that r waited for is waited for too (see waitFencedStop).
func (r *runner) drain(timeout time.Duration) {
	defer r.hcancel()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	cancelled := false
	// expired cancels the handlers' context at the first deadline and
	// reports true at the second.
	expired := func() bool {
		if cancelled {
			r.giveUp()
			r.waitDisposals()
			return true
		}
		cancelled = true
		r.hcancel()
		deadline.Reset(timeout)
		return false
	}
	orderly := r.c.o.Orderly
	if !orderly {
		// From now on a worker starts only the gaps: no new message begins
		// after the stop was asked for.
		r.pq.stopAfterGaps()
	}
	r.stopPulling()
	for waiting := true; waiting; {
		select {
		case <-r.done: // in orderly mode, after the running handler returned
			waiting = false
		case <-deadline.C:
			if expired() {
				r.c.log.Warn("stop timeout: orderly handler still running; its message may be delivered again", "queue", r.grant.QueueRef)
				r.pq.stop()
				return
			}
		}
	}
	if orderly {
		if !r.waitFencedStop(deadline, expired) {
			r.c.log.Warn("stop timeout: fenced orderly handler still running; the queue is released anyway", "queue", r.grant.QueueRef)
			r.pq.stop()
			return
		}
		// The running handler has returned: the fence covers what it handled.
		r.pq.stopAfterGaps()
	}
	var gapping atomic.Int32 // gap handlers started here and not returned
	for {
		ch := r.pq.wait()
		gaps, running := r.pq.gaps()
		for _, m := range gaps {
			gapping.Add(1)
			r.c.goFunc(func() {
				defer r.pq.poke()
				defer gapping.Add(-1)
				r.handleConcurrent(m) // a worker's task for it may begin it first: it runs once
			})
		}
		if !running && gapping.Load() == 0 && r.pq.stopIfIdle() {
			return // nothing begins from now on: a later retry's task finds the queue stopped
		}
		select {
		case <-ch:
		case <-deadline.C:
			if expired() {
				r.c.log.Warn("stop timeout: handlers still running; their messages may be delivered again",
					"queue", r.grant.QueueRef, "running", r.pq.runningCount())
				r.pq.stop()
				return
			}
		}
	}
}

// waitFencedStop is an orderly drain's wait, under its deadline (see
// drain's expired), for the handlers of the queue's fenced runners that r
// waited for (see waitPrev): the queue is not committed and released, for
// another member to start, while one of them runs. false when the drain
// gives up.
func (r *runner) waitFencedStop(deadline *time.Timer, expired func() bool) bool {
	for _, prev := range r.prev {
		for waiting := true; waiting; {
			select {
			case <-prev:
				waiting = false
			case <-deadline.C:
				if expired() {
					return false
				}
			}
		}
	}
	return true
}

// stopPulling cancels the pull loop's context, and ends the runner if it
// is parked (see park.go).
func (r *runner) stopPulling() {
	r.cancel()
	r.c.stopParked(r)
}

// abandon stops the runner without waiting or committing. Its running
// handler calls, whose results are ignored from now on, are waited for
// by Close only up to its waits (see Consumer.Close).
func (r *runner) abandon() {
	r.markCalls(&r.abandoned, callsAbandoned)
	r.pq.stop()
	r.stopPulling()
	r.hcancel()
}

// pullLoop pulls the queue into the process queue and dispatches what it
// pulled. In-process, at the end of the queue it parks the runner (see
// park.go) and returns instead of holding a goroutine in a long-poll; it
// runs again at the next append.
func (r *runner) pullLoop() {
	parked := false
	defer func() {
		// Parked, the lane was marked idle before it parked: from then on
		// its resumption (unpark) owns the mark, which a late reset here
		// would undo.
		if !parked {
			r.laneBusyAt(false, laneStopped) // stopped
			close(r.done)
		}
	}()
	c := r.c
	e := engineOf(c.b)
	wait := c.o.PullWait
	if e != nil {
		wait = 0 // park instead of long-polling
	}
	next := r.next // where the last loop parked
	if !r.waitPrev() {
		return
	}
	r.prevDone = true
	backoff := 100 * time.Millisecond
	for r.ctx.Err() == nil {
		if !r.waitForRoom() {
			return
		}
		res, err := c.b.Pull(r.ctx, &PullRequest{
			Topic: r.grant.Topic, Queue: r.grant.Queue, Offset: next, Max: c.o.PullBatch, Filter: r.filter,
			Wait: r.laneWait(wait), Group: c.o.Group, Member: c.o.ID, Epoch: r.grant.Epoch,
		})
		if err != nil {
			if r.ctx.Err() != nil || errors.Is(err, ErrClosed) {
				return
			}
			if errors.Is(err, ErrFenced) || errors.Is(err, ErrNotMember) || errors.Is(err, ErrTopicNotFound) || errors.Is(err, ErrQueueNotFound) {
				// The assignment moved on; the membership loop will catch up.
				c.log.Info("pull refused; stopping queue", "queue", r.grant.QueueRef, "err", err)
				return
			}
			if past, ok := r.deadLetterTooLarge(err, next); ok {
				next = past
				backoff = 100 * time.Millisecond
				continue
			}
			c.log.Warn("pull failed", "queue", r.grant.QueueRef, "err", err, "retry_in", backoff)
			if !sleepCtx(r.ctx, backoff) {
				return
			}
			backoff = min(backoff*2, 5*time.Second)
			continue
		}
		backoff = 100 * time.Millisecond
		switch res.Status {
		case PullFound:
			msgs := r.pq.add(res.Messages, res.NextOffset)
			next = res.NextOffset
			r.laneBusyAt(true, next)
			if len(msgs) > 0 && !r.dispatch(msgs) {
				return
			}
			r.laneBusyAt(res.NextOffset < res.MaxOffset, next)
		case PullOffsetMoved:
			c.log.Warn("offset moved", "queue", r.grant.QueueRef, "from", next, "to", res.NextOffset)
			if res.NextOffset > next {
				r.pq.skip(res.NextOffset)
			}
			next = res.NextOffset
		default:
			r.pq.skip(res.NextOffset)
			next = res.NextOffset
			r.laneBusyAt(res.NextOffset < res.MaxOffset, next)
			if e != nil && res.Status == PullNoNewMessage {
				var retry bool
				if parked, retry = c.park(e, r, next); !retry {
					return
				}
			}
		}
	}
}

// waitForRoom blocks while the process queue is over its flow-control
// limits; false when the runner stops.
func (r *runner) waitForRoom() bool {
	o := &r.c.o
	for {
		ch := r.pq.waitUnless(func(n int, b, span int64) bool {
			return n < o.MaxCachedMessages && b < o.MaxCachedBytes && (o.Orderly || span < o.MaxSpan)
		})
		if ch == nil {
			return true
		}
		select {
		case <-ch:
		case <-r.ctx.Done():
			return false
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// handleConcurrent runs the handler for m. On failure a clustering consumer
// sends m to the group's retry topic (due after the backoff for its attempt)
// and a broadcasting one retries it locally after RetryDelay (or the
// handler's RetryAfter); after
// MaxAttempts, or when the handler asks for it, m goes to the dead letters.
// If storing it elsewhere fails, m is retried locally: it is never dropped.
func (r *runner) handleConcurrent(m *Message) {
	if !r.pq.begin(m.Offset) || r.finishExpired(m) {
		return
	}
	finished := false
	defer r.leaveUnfinished(&finished, m)
	view := origin(m)
	ctx, end := r.c.traceHandle(r.hctx, view)
	r.finish(m, view, r.invoke(ctx, view), end)
	finished = true
}

// leaveUnfinished is deferred by the handling of msgs, which began them.
// When a hook or the handler called runtime.Goexit (as t.FailNow does),
// which recover cannot stop, the handling ended there, *finished false:
// the messages it left running are then left unfinished, as ones whose
// handler stopped before it began (ErrNotHandled), so that drains and
// handoffs do not wait for them; the queue's next owner gets them again.
func (r *runner) leaveUnfinished(finished *bool, msgs ...*Message) {
	if *finished {
		return
	}
	for _, m := range msgs {
		r.pq.leaveRunning(m.Offset)
	}
}

// finish records the result of one handling of m (view is what the handler
// saw): done on success, left unfinished when the handler was stopped
// before it began (ErrNotHandled), else through the failure path (see
// dispose).
func (r *runner) finish(m, view *Message, err error, end handleEnd) {
	if r.stoppedUnhandled(err) {
		// The handler says it stopped before it began (ErrNotHandled): the
		// run is not counted and the message is left to the queue's next
		// owner, not sent back nor run again by the drain, whose cancelled
		// context would only stop it again.
		end.end(HandleOutcome{Err: err, Outcome: OutcomeUnfinished, Attempts: m.Attempt + 1})
		r.pq.leave(m.Offset)
		return
	}
	if err == nil || r.abandoned.Load() || !r.beginDispose() {
		// A fenced runner cannot commit, and a drain that gave up has
		// committed already: a failure there stays for the next delivery.
		end.end(HandleOutcome{Err: err, Outcome: outcomeIf(err == nil, OutcomeHandled, OutcomeUnfinished), Attempts: m.Attempt + 1})
		r.pq.end(m.Offset, err == nil)
		return
	}
	defer r.endDispose() // after the message is done (or not), so a drain's commit sees it
	if r.pq.isDone(m.Offset) {
		end.end(HandleOutcome{Err: err, Outcome: OutcomeUnfinished, Attempts: m.Attempt + 1})
		return // the consume timeout already sent it back
	}
	out := r.dispose(m, view, err)
	end.end(out) // before the message is done, so a drained consumer has ended its spans
	r.pq.end(m.Offset, out.Outcome == OutcomeRetry || out.Outcome == OutcomeDeadLetter || out.Outcome == OutcomeDeleted)
}

// dispose deals with a failed message: it is stored in the retry or
// dead-letter topic (OutcomeRetry, OutcomeDeadLetter) or scheduled for a
// local retry (OutcomeRetryLocal).
func (r *runner) dispose(m, view *Message, err error) HandleOutcome {
	c := r.c
	// Not the handler's context: a failure after Close cancelled it is
	// still stored in the retry or dead-letter topic.
	ctx, cancel := context.WithTimeout(c.ctx, sendBackTimeout)
	defer cancel()
	attempts := m.Attempt + 1
	out := HandleOutcome{Err: err, Attempts: attempts, Outcome: OutcomeRetryLocal, Delay: c.localDelay(err)}
	if attempts >= c.o.MaxAttempts || errors.Is(err, ErrDeadLetter) {
		if done, gone := c.deadLetter(ctx, view, attempts, err); done {
			return HandleOutcome{Err: err, Attempts: attempts, Outcome: outcomeIf(gone, OutcomeDeleted, OutcomeDeadLetter)}
		}
	} else if c.o.Model == Clustering {
		serr := c.sendBack(ctx, view, attempts, err)
		if serr == nil {
			return HandleOutcome{Err: err, Attempts: attempts, Outcome: OutcomeRetry, Delay: c.retryDelay(attempts, err)}
		}
		if c.messageGone(view, serr) {
			return HandleOutcome{Err: err, Attempts: attempts, Outcome: OutcomeDeleted, StoreErr: serr}
		}
		c.log.Warn("send-back failed; retrying locally", "topic", view.Topic, "offset", view.Offset, "err", serr, "in", c.o.SendBackRetryDelay)
		r.retryLocally(m, attempts, c.o.SendBackRetryDelay)
		out.Delay, out.StoreErr = c.o.SendBackRetryDelay, serr
		return out
	}
	r.retryLocally(m, attempts, out.Delay)
	return out
}

// retryLocally hands m to the worker pool again after d.
func (r *runner) retryLocally(m *Message, attempts int, d time.Duration) {
	c := r.c
	m.Attempt = attempts
	retry := r.pq.awaitRetry(m.Offset, attempts) // stored with the next commit
	c.goFunc(func() {
		// A drain may hand the message out as a gap before the delay is
		// over: then it is no longer this retry's to run.
		if sleepCtx(r.hctx, d) && r.pq.takeRetry(m.Offset, retry) {
			c.submit(task{r: r, m: m}, r.hctx.Done())
		}
	})
}

// handleOrderly handles m in place until it succeeds, is dead-lettered or
// expires (see finishExpired); false when the runner stopped first (m
// stays unfinished).
func (r *runner) handleOrderly(m *Message) bool {
	for {
		if !r.memberConfirmed() || !r.pq.begin(m.Offset) {
			return false
		}
		if r.finishExpired(m) {
			return true
		}
		view := origin(m)
		ctx, end := r.c.traceHandle(r.hctx, view)
		err := r.invoke(ctx, view)
		if err == nil {
			end.end(HandleOutcome{Outcome: OutcomeHandled, Attempts: m.Attempt + 1})
			r.pq.end(m.Offset, true)
			return true
		}
		// A run the handler says it stopped before it began (ErrNotHandled)
		// is not counted, as one whose result is ignored is not.
		if r.abandoned.Load() || r.stoppedUnhandled(err) || !r.beginDispose() {
			end.end(HandleOutcome{Err: err, Outcome: OutcomeUnfinished, Attempts: m.Attempt + 1})
			r.pq.end(m.Offset, false)
			return false
		}
		// Every other run counts, also one that failed because it was asked
		// to stop; the count is stored with the next commit, so a restart
		// goes on from it.
		m.Attempt++
		r.pq.failed(m.Offset, m.Attempt)
		var done, gone bool
		if m.Attempt >= r.c.o.MaxAttempts || errors.Is(err, ErrDeadLetter) {
			done, gone = r.deadLetterNow(view, m.Attempt, err)
		}
		if done {
			end.end(HandleOutcome{Err: err, Outcome: outcomeIf(gone, OutcomeDeleted, OutcomeDeadLetter), Attempts: m.Attempt})
			r.pq.end(m.Offset, true)
			r.endDispose()
			return true
		}
		r.pq.end(m.Offset, false)
		r.endDispose()
		if r.hctx.Err() != nil {
			end.end(HandleOutcome{Err: err, Outcome: OutcomeUnfinished, Attempts: m.Attempt})
			return false // stopping: the message stays uncommitted
		}
		// (The orderly runner's drain waits for this loop to return, so
		// ending the span after the message is done is still in time.)
		delay := r.c.localDelay(err)
		end.end(HandleOutcome{Err: err, Outcome: OutcomeRetryLocal, Attempts: m.Attempt, Delay: delay})
		if !sleepCtx(r.ctx, delay) {
			return false
		}
	}
}

// memberConfirmed waits, in an orderly clustering group, while the
// consumer's membership is in doubt (see memberGate), so that no message
// of the queue begins on this member after the engine may have granted
// the queue to another; false when the runner stops (first, or meanwhile:
// a stopping orderly runner begins no new message, see dispatch).
func (r *runner) memberConfirmed() bool {
	if r.c.gated() && !r.c.gate.wait(r.ctx.Done()) {
		return false
	}
	return r.ctx.Err() == nil
}

// sendBackTimeout bounds one store of a failed message in the retry or
// dead-letter topic.
const sendBackTimeout = 30 * time.Second

// deadLetterNow stores a failed message in the dead letters under its own
// deadline, not the handler's context (see Consumer.deadLetter for done
// and gone).
func (r *runner) deadLetterNow(view *Message, attempts int, cause error) (done, gone bool) {
	ctx, cancel := context.WithTimeout(r.c.ctx, sendBackTimeout)
	defer cancel()
	return r.c.deadLetter(ctx, view, attempts, cause)
}

// invoke calls the handler for view (see Consumer.invoke), counted as one
// of r's handler calls.
func (r *runner) invoke(ctx context.Context, view *Message) error {
	r.enterCall()
	defer r.leaveCall()
	return r.c.invoke(ctx, view)
}

// invokeBatch calls the batch handler for views (see
// Consumer.invokeBatch), counted as one of r's handler calls.
func (r *runner) invokeBatch(ctx context.Context, views []*Message) []error {
	r.enterCall()
	defer r.leaveCall()
	return r.c.invokeBatch(ctx, views)
}

// enterCall counts a handler call of r beginning; once a drain gave up on
// r, or r was fenced, it is one Close does not wait for without end (see
// liveCount).
func (r *runner) enterCall() {
	r.countCalls(r.calls.Add(1), 1)
}

// leaveCall counts a handler call of r ending.
func (r *runner) leaveCall() {
	r.countCalls(r.calls.Add(-1), -1)
}

// giveUp is a drain's giving up on r's running handlers: their late
// results are ignored (see beginDispose), and Close does not wait for them.
func (r *runner) giveUp() {
	r.markCalls(&r.gaveUp, callsGaveUp)
}

// The bits of runner.calls above its count of handler calls in progress:
// each is set once, with its flag (gaveUp, abandoned), by markCalls.
const (
	callsGaveUp    int64 = 1 << 62
	callsAbandoned int64 = 1 << 61
	callsCount           = callsAbandoned - 1
)

// markCalls sets flag (gaveUp or abandoned) and its bit of r.calls, and
// moves the count of r's handler calls in progress to where the flag puts
// them (see countCalls). The bit and the count change in one word: a call
// that began before the bit is moved here, one that begins after counts
// itself, and each that ends takes itself off where the bit put it.
func (r *runner) markCalls(flag *atomic.Bool, bit int64) {
	for {
		old := r.calls.Load()
		if old&bit != 0 {
			return
		}
		if r.calls.CompareAndSwap(old, old|bit) {
			flag.Store(true)
			n := int(old & callsCount)
			r.countCalls(old, -n)
			r.countCalls(old|bit, n)
			return
		}
	}
}

// countCalls counts d handler calls of r, whose calls word (count and
// bits) is state, in the consumer's liveCount: as given up once a drain
// gave up on r, else as a fenced runner's once r was abandoned, else not
// at all (Close waits for them). A moment's count may be off by a call
// that has just ended (or begun) and not yet taken itself off (or
// counted itself): the call is then at its very end or start, where Close
// may find it either way.
func (r *runner) countCalls(state int64, d int) {
	switch {
	case d == 0:
	case state&callsGaveUp != 0:
		r.c.live.add(0, d)
	case state&callsAbandoned != 0:
		r.c.live.addFenced(d)
	}
}

// invoke calls the handler with hooks, turning a panic into an error.
func (c *Consumer) invoke(ctx context.Context, m *Message) (err error) {
	if c.o.BatchHandler != nil {
		return c.invokeBatch(ctx, []*Message{m})[0]
	}
	if len(c.hooks) == 0 {
		// Without hooks nothing needs the time it took: no clock reads.
		defer func() {
			if p := recover(); p != nil {
				err = handlerPanic(p)
			}
			c.countHandled(err)
		}()
		return c.o.Handler(ctx, m)
	}
	c.runHooks(m, "BeforeHandle", func() error { return c.hooks.beforeHandle(ctx, m) })
	start := time.Now()
	defer func() {
		if p := recover(); p != nil {
			err = handlerPanic(p)
		}
		c.countHandled(err)
		c.runHooks(m, "AfterHandle", func() error { return c.hooks.afterHandle(ctx, m, err, time.Since(start)) })
	}()
	return c.o.Handler(ctx, m)
}

// handlerPanic is the error of a handler that panicked with p.
func handlerPanic(p any) error {
	return fmt.Errorf("%w: %v\n%s", ErrHandlerPanic, p, debug.Stack())
}

// countHandled counts one handling's result.
func (c *Consumer) countHandled(err error) {
	if err != nil {
		c.failures.Add(1)
	} else {
		c.handled.Add(1)
	}
}

// deadLetterTooLarge handles a pull refused because the next message is
// larger than this client can receive (see MessageTooLargeError): the
// message goes to the group's dead letters by reference, and the pull goes
// on past it. ok is false when err is another error or the message could
// not be stored there (then the pull is retried, with backoff).
func (r *runner) deadLetterTooLarge(err error, next int64) (past int64, ok bool) {
	var big *MessageTooLargeError
	if !errors.As(err, &big) || big.QueueRef != r.grant.QueueRef || big.Offset < next {
		return 0, false
	}
	c := r.c
	req := &SendBackRequest{Group: c.o.Group, Member: c.o.ID, Grant: r.grant, Offset: big.Offset,
		Attempts: 1, Cause: truncate(big.Error(), 1024), DeadLetter: true}
	if _, err := c.b.SendBack(r.ctx, req); err != nil {
		c.log.Error("message too large for this client; moving it to the dead letters failed, will retry",
			"queue", r.grant.QueueRef, "offset", big.Offset, "err", err)
		return 0, false
	}
	c.failures.Add(1)
	c.log.Warn("message too large for this client: dead-lettered", "queue", r.grant.QueueRef, "offset", big.Offset, "limit", big.Limit)
	r.pq.skip(big.Offset + 1)
	return big.Offset + 1, true
}

// beginDispose registers a failure path that is about to store a
// send-back (retry or dead letter); false when a drain gave up already,
// and then the message stays unfinished, for the next owner. Every true is
// followed by endDispose once the message's outcome is recorded. With the
// drain's gaveUp flag (both sequentially consistent atomics) this makes a
// send-back either wait for by the drain, so the final commit passes it, or
// never start: it is never stored behind a commit that leaves its message
// to be delivered again.
func (r *runner) beginDispose() bool {
	r.disposing.Add(1)
	if r.gaveUp.Load() {
		r.disposing.Add(-1)
		return false
	}
	return true
}

// endDispose ends what beginDispose began and wakes a waiting drain.
func (r *runner) endDispose() {
	r.disposing.Add(-1)
	r.pq.poke()
}

// waitDisposals waits until no failure path of r stores a send-back; each
// is bounded by sendBackTimeout.
func (r *runner) waitDisposals() {
	for r.disposing.Load() > 0 {
		ch := r.pq.wait()
		if r.disposing.Load() == 0 {
			return
		}
		select {
		case <-ch:
		case <-time.After(10 * time.Millisecond):
		}
	}
}
