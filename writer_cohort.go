package equeue

import "time"

// Cohorts: keeping the senders of one fsync together.
//
// Senders that wait for their fsync come back together once it completes.
// While an fsync runs, other senders queue; if their batch were synced on
// its own as soon as the running fsync completes, the two groups would
// alternate for good, each paying one fsync for half the senders. So,
// while the completer is busy, the writer holds a batch that needs a sync:
//
//   - on a store that syncs (Badger), it writes the batch at once and keeps
//     the written flight (held) instead of handing it to the completer;
//   - on an AsyncWriter (a replicated store) a write starts replicating,
//     so it holds the batch before writing it.
//
// When the completer settles, the writer probes for the senders it just
// completed (settle.cohort): if one comes back within a quarter of the
// linger, it gathers them (up to the linger) into one more batch and hands
// everything held together, for one fsync; if none does (SendAsync callers
// and open-loop senders do not wait), it hands what it holds at once, and
// probes less often after each miss, so open-loop senders rarely pay the
// probe.

// maxProbeSkip bounds how many settles the writer skips probing after
// misses in a row.
const maxProbeSkip = 32

// cohorts is the writer's side of the above.
type cohorts struct {
	held   []*flight // written batches not yet handed to the completer
	expect int       // senders expected back after the last settle
	skip   int       // settles left before the next probe
	misses int       // probes in a row that saw no sender come back
	// gather marks the batch being collected as the returning senders'
	// after a probe hit: once written, it goes with the held batches.
	gather bool
}

// completerBusy reports whether the completer has batches to complete beyond the
// ones the writer holds (those are counted in inflight too).
func (e *Engine) completerBusy(co *cohorts) bool {
	return e.pipe.inflight.Load() > int32(len(co.held))
}

// probe records that cohort senders were just completed and reports
// whether to wait for them now, and how long for the first.
func (co *cohorts) probe(cohort int, linger time.Duration) (time.Duration, bool) {
	co.expect = cohort
	if cohort == 0 {
		return 0, false
	}
	if co.skip > 0 {
		co.skip--
		return 0, false
	}
	return linger / 4, true
}

func (co *cohorts) hit() { co.misses, co.skip = 0, 0 }

func (co *cohorts) miss() {
	co.misses++
	co.skip = min(1<<min(co.misses, 5)-1, maxProbeSkip)
	co.expect = 0
}

// handHeld hands every held batch to the completer in one group.
func (e *Engine) handHeld(co *cohorts) {
	if len(co.held) == 0 {
		return
	}
	e.pipe.flights <- co.held
	co.held = nil
}

// awaitHeld waits, while the writer holds written batches, for the next
// command or for the completer to settle. On a settle it probes for the
// senders just completed: a first one arriving is returned and the batch
// it starts is gathered with the held ones; otherwise everything held is
// handed over and it returns nil.
func (e *Engine) awaitHeld(co *cohorts, timer *time.Timer, stopping *bool) *command {
	for {
		if e.completerBusy(co) {
			select {
			case c := <-e.writeCh:
				return c
			case <-e.pipe.settled:
				continue // look again: the token may be an earlier group's
			case <-e.writerStop:
				*stopping = true
				e.handHeld(co)
				return nil
			}
		}
		select { // the completer is idle: a token left now is stale
		case <-e.pipe.settled:
		default:
		}
		wait, ok := co.probe(int(e.pipe.cohort.Load()), time.Duration(e.linger.Load()))
		if ok {
			timer.Reset(wait)
			select {
			case c := <-e.writeCh:
				if !timer.Stop() {
					<-timer.C
				}
				co.hit()
				co.gather, co.expect = true, max(co.expect-1, 0)
				return c
			case <-timer.C:
				co.miss()
			case <-e.writerStop:
				if !timer.Stop() {
					<-timer.C
				}
				*stopping = true
			}
		}
		e.handHeld(co)
		return nil
	}
}
