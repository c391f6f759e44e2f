package equeue

import (
	"slices"
	"time"
)

// Cohorts: keeping the senders of one fsync together.
//
// Senders acknowledged by one Sync come back together. If part of them is
// written and synced before the rest are back, the rest pay a Sync of their
// own, and the two halves then take turns for good, each paying a whole
// fsync. Three things keep them together:
//
//   - the writer lingers (up to groupCommitLinger) for as many senders as
//     the last Sync acknowledged — its cohort — not only for as many as its
//     own last batch held;
//   - before syncing batches that were all written while the previous Sync
//     ran, the completer waits (up to the recent Sync time) for the batch of
//     the senders that Sync just released, and syncs them together
//     (awaitCohort);
//   - while the writer is building a batch or has commands queued, the
//     completer lets that batch share the Sync it is about to make, and the
//     writer stops lingering meanwhile (joinBuilding).
//
// The completer waits only while store writes take less time than a Sync
// (waitingPays): with large batches, overlapping a Sync with the next write
// does better than syncing both at once.
//
// Senders that do not wait for their Send never come back as a cohort:
// waiting for them only adds latency. A Producer's SendAsync is known not
// to wait (command.waits), so neither the writer's target nor the cohort
// counts it. Open-loop producers that do block are found out: each wait
// for a cohort that ends short suspends that wait for the next batches,
// twice as many after each miss in a row, up to maxCohortSkip.

// maxCohortSkip bounds how many batches go without waiting for a cohort
// after misses in a row.
const maxCohortSkip = 32

// cohortBackoff suspends waiting for cohorts that do not come back.
type cohortBackoff struct {
	skip   int // waits left to skip
	misses int // waits in a row that ended short
}

// try reports whether to wait for a cohort this time.
func (c *cohortBackoff) try() bool {
	if c.skip > 0 {
		c.skip--
		return false
	}
	return true
}

// done records how a wait ended.
func (c *cohortBackoff) done(short bool) {
	if !short {
		c.misses = 0
		return
	}
	c.misses++
	c.skip = min(1<<min(c.misses, 5), maxCohortSkip)
}

// cohortTarget is the writer's side: how many commands to gather.
type cohortTarget struct {
	backoff cohortBackoff
	using   bool // the batch being gathered lingers for a cohort
	decided bool // want was asked for this batch
}

// want returns how many commands to gather before writing without more
// lingering: the larger of prev (the writer's recent batch size) and the
// cohort the completer last acknowledged, unless misses suspended it.
func (t *cohortTarget) want(prev, cohort int) int {
	if !t.decided {
		t.decided = true
		t.using = cohort > prev && t.backoff.try()
	}
	if t.using {
		return max(prev, cohort)
	}
	return prev
}

// gathered records how the batch's gathering ended: whether its linger
// expired before the target was reached, or was cut short because the
// completer waits for the batch (then it counts neither way).
func (t *cohortTarget) gathered(expired, cut bool) {
	if t.using && !cut {
		t.backoff.done(expired)
	}
	t.using, t.decided = false, false
}

// awaitCohort is the completer's side: when every batch of group was
// written before the last Sync acknowledged its senders, it waits for the
// next batch — the writer gathers those senders into it — so that one Sync
// covers both. The wait ends short when no batch comes in time or the one
// that comes holds less than half of the cohort.
func (e *Engine) awaitCohort(group []*flight, b *cohortBackoff) []*flight {
	settles, cohort := e.pipe.settles.Load(), int(e.pipe.cohort.Load())
	if cohort == 0 || slices.ContainsFunc(group, func(f *flight) bool { return f.settle == settles }) || !e.waitingPays() || !b.try() {
		return group
	}
	// Waiting pays only while it is shorter than the Sync the cohort would
	// otherwise need on its own: take the recent Sync time as the bound.
	timer := time.NewTimer(time.Duration(e.pipe.syncTime.Load()))
	defer timer.Stop()
	select {
	case f, ok := <-e.pipe.flights:
		if !ok {
			return group
		}
		group = append(group, f)
		// The cohort came back if the batch holds at least half of it; a
		// batch of a few open-loop senders does not count.
		b.done(2*len(f.batch) < cohort)
	case <-timer.C:
		b.done(true)
	}
	return group
}
