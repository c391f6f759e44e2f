package equeue

import (
	"reflect"
	"slices"
	"sync/atomic"
)

// Parking: an idle in-process consumer holds no goroutine per queue. A
// runner whose pull found the end of its queue hands the queue's wake-up
// channel to the consumer's one parking goroutine and its pull loop
// returns; the parking goroutine starts the loop again at the next append,
// or ends the runner when it stops. Over the network (package remote) the
// pull loops long-poll instead.

// parkedRunner is a runner waiting for wake to close.
type parkedRunner struct {
	r    *runner
	wake <-chan struct{}
}

// wakeAt returns the channel closed at the next append to ref, or false
// when messages at or past off are visible already or the queue is gone.
func (e *Engine) wakeAt(ref QueueRef, off int64) (<-chan struct{}, bool) {
	q, err := e.queueOf(ref)
	if err != nil {
		return nil, false
	}
	_, next, wake := q.bounds()
	if next > off {
		return nil, false
	}
	return wake, true
}

// park hands r to the parking goroutine; false when the consumer stopped
// (then the pull loop ends as usual).
func (c *Consumer) park(r *runner, wake <-chan struct{}) bool {
	select {
	case c.parkCh <- parkedRunner{r: r, wake: wake}:
		return true
	case <-c.ctx.Done():
		return false
	}
}

// parkLoop restarts a parked runner's pull loop when its queue wakes, and
// ends a parked runner (closing its done channel, as its pull loop would)
// when the runner or the consumer stops. It also runs the consumer's
// timers (periodic commit, stuck-handler watchdog) until the loops stop;
// each tick's work runs in its own goroutine, so a slow store delays no
// wake-up, and a tick is skipped while the previous one's work still runs.
func (c *Consumer) parkLoop() {
	commit, watchdog, stopTimers := c.startTimers()
	defer stopTimers()
	var committing, watching atomic.Bool
	tick := func(busy *atomic.Bool, work func()) {
		if c.loopCtx.Err() != nil || !busy.CompareAndSwap(false, true) {
			return
		}
		c.goFunc(func() {
			defer busy.Store(false)
			work()
		})
	}
	var parked []parkedRunner
	recv := func(ch any) reflect.SelectCase {
		return reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(ch)}
	}
	// A runner stopped while parked (its context cancelled) is seen at the
	// unpark poke that follows every stop (runner.stopPulling), or when it
	// arrives here already stopped.
	const fixed = 5 // cases before the parked runners'
	var cases []reflect.SelectCase
	for {
		cases = append(cases[:0], recv(c.ctx.Done()), recv(c.parkCh), recv(c.unpark), recv(commit), recv(watchdog))
		for _, p := range parked {
			cases = append(cases, recv(p.wake))
		}
		c.parkedN.Store(int32(len(parked)))
		i, v, _ := reflect.Select(cases)
		switch {
		case i == 0:
			for _, p := range parked {
				close(p.r.done)
			}
			return
		case i == 1:
			p := v.Interface().(parkedRunner)
			if p.r.ctx.Err() != nil {
				close(p.r.done) // stopped on its way here
			} else {
				parked = append(parked, p)
			}
		case i == 2:
			parked = slices.DeleteFunc(parked, func(p parkedRunner) bool {
				if p.r.ctx.Err() != nil {
					close(p.r.done) // stopped while parked
					return true
				}
				return false
			})
		case i == 3:
			tick(&committing, c.periodicCommit)
		case i == 4:
			tick(&watching, c.sendBackOverdue)
		default:
			k := i - fixed
			p := parked[k]
			parked = slices.Delete(parked, k, k+1)
			if p.r.ctx.Err() != nil {
				close(p.r.done) // stopped while parked
			} else {
				c.goFunc(p.r.pullLoop)
			}
		}
	}
}
