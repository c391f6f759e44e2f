package equeue

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/equeue-go/equeue/store"
)

// The writer. One goroutine takes commands (command.go) from writeCh, packs
// whole commands into a batch whose cost stays within the store's limits,
// stamps the batch with the time, applies it as one store write, and then
// makes its own memory (next offsets, dedup index) follow the write. The
// completer syncs once when any command asks for it, and only then
// publishes the batch to readers and completes the commands.
//
// The writer does not wait for a batch's fsync (or, on a store with
// WriteAsync, its replication) before it builds and writes the next one:
// a few written batches wait in the completer (writer_pipeline.go),
// which syncs them, one Sync for all that are waiting, and completes them
// strictly in write order. What is stored is therefore always a prefix of
// the batches written, and memory a reader sees follows the syncs.
//
// Failure semantics (see the README's guarantees):
//   - Write fails: nothing of the batch is stored and memory is unchanged;
//     every command gets the store's error ("not stored").
//   - Write succeeds, Sync fails: the batch is kept. Offsets, delay-log slots
//     and dedup entries advance as if it were durable, so nothing it wrote is
//     reused or contradicted, and every command gets an error matching
//     ErrIndeterminate ("outcome unknown"). The batch's new offsets are
//     never published to readers, and every later write is refused with
//     ErrStoreFailed until the engine is reopened (storefailure.go).
//   - On an AsyncWriter (a replicated store), the writer counts a batch in
//     its memory once it is handed over; if the write then fails, the
//     store refuses every later one, so that memory is never written from
//     again, and the batch's commands get the store's error.

// Writer batching bounds used when the store sets no limit.
const (
	defaultMaxBatchEntries = 8192
	defaultMaxBatchBytes   = 8 << 20
)

func (e *Engine) batchLimits() (ops, bytes int) {
	ops, bytes = defaultMaxBatchEntries, defaultMaxBatchBytes
	if e.limits.MaxEntries > 0 && e.limits.MaxEntries < ops {
		ops = e.limits.MaxEntries
	}
	if e.limits.MaxBytes > 0 && e.limits.MaxBytes < bytes {
		bytes = e.limits.MaxBytes
	}
	return ops, bytes
}

// internalShare bounds the scheduler's work in one batch to 1/internalShare
// of its operations, so moving due messages never crowds out senders.
const internalShare = 4

// groupCommitLinger bounds how long the writer waits for the senders of
// its previous batch to come back before it writes and fsyncs a batch. Without
// it, senders acknowledged together split into two cohorts that alternate
// between waiting on an fsync and queueing, halving every group commit.
//
// The completer waits as long for a batch being built to share its Sync
// (joinSync). Tests set another with SetGroupCommitLinger (Engine.linger).
const groupCommitLinger = 200 * time.Microsecond

// maxGroupCommitLinger bounds the linger when Syncs are slow (lingerFor).
// Tests set another with SetGroupCommitLingerCap.
const maxGroupCommitLinger = time.Millisecond

// lingerFor returns how long the writer waits for returning senders: the
// linger, or as long as a recent Sync took when that is longer, up to
// maxGroupCommitLinger. A sender that comes back too late for the batch
// pays a Sync of its own (or an extra write folded into the next one),
// so waiting for it up to a Sync's time costs no more; with a slow disk
// the senders' return often outlasts the fixed linger: in BenchmarkSend
// with Syncs of 0.5–0.9 ms, about two batches in three were written before
// the cohort was back, 55–57 messages per Sync instead of 64 and two
// writes per Sync. The cap keeps a Sync's spike from holding open-loop
// senders for long.
func (e *Engine) lingerFor() time.Duration {
	d := time.Duration(e.linger.Load())
	if sync := time.Duration(e.pipe.syncTime.Load()); sync > d {
		d = max(d, min(sync, time.Duration(e.lingerCap.Load())))
	}
	return d
}

// runWriter is the single writer loop: gather, stamp, apply, complete.
func (e *Engine) runWriter() {
	defer e.writerWG.Done()
	defer close(e.writerDone)
	defer e.startCompleter()() // every written batch completes before writerDone
	maxOps, maxBytes := e.batchLimits()
	var (
		batch    []*command
		carry    *command
		prev     int  // waiting senders of recent synced batches: those likely to return
		stopping bool // Close asked the writer to drain and stop
		expiring bool // expired dedup entries are left for another batch
		cohort   cohortTarget
		// yieldsOff: letSendersBack does not yield before then.
		yieldsOff time.Time
		linger    = time.NewTimer(time.Hour)
	)
	linger.Stop()
	defer linger.Stop()
	// take returns the next queued command. With wait it blocks until one
	// comes or Close stops the writer; once stopping it only drains what is
	// queued and returns nil when nothing is.
	var take func(wait bool) *command
	take = func(wait bool) *command {
		select {
		case c := <-e.writeCh:
			return c
		default:
		}
		if !wait || stopping {
			return nil
		}
		select {
		case c := <-e.writeCh:
			return c
		case <-e.writerStop:
			stopping = true
			return take(false)
		}
	}
	for {
		batch = make([]*command, 0, cap(batch)) // the completer keeps the last one
		first := carry
		carry = nil
		if first == nil {
			first = take(!expiring)
		}
		if first == nil && !expiring {
			if stopping {
				return
			}
			continue
		}
		e.pipe.building.Store(true)
		ops, bytes, internal := 0, 0, 0
		waiting := 0 // commands in batch whose callers block until it completes
		needSync := false
		if first != nil {
			batch = append(batch, first)
			ops, bytes, needSync = first.ops, first.bytes, first.sync
			if first.internal {
				internal = first.ops
			}
			if first.waits() {
				waiting++
			}
		}
		// cut: the completer waits for this batch, so it stopped lingering
		// (which tells nothing about the senders coming back).
		lingering, expired, cut := false, false, false
		stretched := false // the linger was longer than e.linger (lingerFor)
		for len(batch) > 0 && ops < maxOps && bytes < maxBytes {
			c := take(false)
			if c == nil {
				// Queue empty: wait a little for returning senders only when an
				// fsync is coming and fewer waiting senders than last time are
				// here (writer_cohort.go).
				want := cohort.want(prev, int(e.pipe.cohort.Load())) - waiting
				if stopping || expired || cut || !needSync || want <= 0 {
					break
				}
				if e.pipe.joining.Load() {
					cut = true
					break
				}
				if !lingering {
					lingering = true
					d := e.lingerFor()
					stretched = d > time.Duration(e.linger.Load())
					linger.Reset(d)
				}
				switch e.awaitSenders(min(want, cap(e.writeCh)), linger.C) {
				case lingerExpired:
					lingering, expired = false, true // the timer is spent
					e.pipe.lingerExpiries.Add(1)
				case lingerCut:
					cut = true
				}
				continue
			}
			if ops+c.ops > maxOps || bytes+c.bytes > maxBytes || (c.internal && internal+c.ops > maxOps/internalShare) {
				carry = c
				break
			}
			batch = append(batch, c)
			ops += c.ops
			bytes += c.bytes
			if c.internal {
				internal += c.ops
			}
			if c.waits() {
				waiting++
			}
			needSync = needSync || c.sync
		}
		if lingering {
			// No drain: since Go 1.23 a stopped timer's channel holds no
			// stale value, and receiving after a Stop that came too late
			// (the expiry was consumed) would block for good.
			linger.Stop()
		}
		cohort.gathered(expired, cut)
		var failed, inline bool
		expiring, failed, inline = e.runBatch(batch, waiting, time.Now(), maxOps-ops, maxBytes-bytes)
		if inline {
			e.letSendersBack(len(batch), &yieldsOff)
		}
		e.pipe.building.Store(false)
		if failed && len(batch) == 0 {
			expiring = false // retried with the next command, not in a loop
		}
		switch {
		case !needSync:
			prev = 0
		case waiting >= prev:
			prev = waiting
		case expired && stretched:
			// A linger stretched to a slow Sync's time ran out before prev
			// senders came back: they do not come as a group (open-loop
			// senders, SendAsync), and lingering that long for them again
			// would delay batch after batch. The cohort the completer saw,
			// whose waits back off after misses, still brings a group that
			// does come back. (A short linger that runs out only lowers
			// the target by one, as below: a replicated store, which has no
			// Sync to time, batches better that way. Dropping it on every
			// expiry, a 3-node cluster's Send in cluster.BenchmarkRatio
			// made 16–19k msgs/s against 19–24k in alternated runs.)
			prev = waiting
		default:
			// Remember the largest recent cohort and let it decay slowly, so
			// a batch that came up short does not lower the target for good.
			prev--
		}
	}
}

// Why awaitSenders returned.
const (
	lingerFilled  = iota // want requests are queued (or a wake-up came)
	lingerExpired        // expire fired: it is consumed
	lingerCut            // the completer waits for this batch: stop lingering
)

// awaitSenders sleeps until want requests are queued or expire fires.
// Senders queue without waking the writer one by one — on two cores those
// wake-ups cost as much as the senders' own work — and the one that brings
// the queue to want wakes it (see enqueued). The completer wakes it too
// when it waits for the batch (joinBuilding).
func (e *Engine) awaitSenders(want int, expire <-chan time.Time) int {
	select {
	case <-e.lingerWake: // a late signal meant for an earlier wait
	default:
	}
	if e.pipe.joining.Load() { // the completer waits for this batch
		return lingerCut
	}
	e.lingerWant.Store(int32(want))
	if len(e.writeCh) >= want { // queued before want was published
		e.lingerWant.Store(0)
		return lingerFilled
	}
	select {
	case <-e.lingerWake:
		return lingerFilled
	case <-expire:
		e.lingerWant.Store(0)
		return lingerExpired
	}
}

// enqueued is called after a request was put on writeCh. When the writer
// lingers for the queue to reach a length and it has, it wakes the writer.
// A sender that queued before the writer published its wait is counted by
// the writer's own length check, so no wake-up is lost.
func (e *Engine) enqueued() {
	if want := e.lingerWant.Load(); want > 0 && len(e.writeCh) >= int(want) && e.lingerWant.CompareAndSwap(want, 0) {
		select {
		case e.lingerWake <- struct{}{}:
		default:
		}
	}
}

// batchState is what applying a batch decided, before the store write: the
// write itself and the memory changes to make once it returned.
type batchState struct {
	now      time.Time
	entries  []store.Entry
	meta     []store.MetaOp
	queues   []touched
	needSync bool
	// dupSync: a duplicate of earlier writes only asks for an fsync; it
	// is answered as one even when the batch's write is refused
	// (Engine.complete), so the batch is synced then too (needsSync).
	dupSync  bool
	firstDue time.Time // earliest delivery time the batch schedules

	pending      map[dedupRef]dedupEntry // dedup entries this batch records
	dedup        []dedupPut
	expired      []dedupPut
	expiredOrder []expiredPrefix
	groups       []dedupGroupBuild // dedup groups this batch writes
	dropIdx      []uint32          // deleted topics' dedup indexes found empty

	// queuesBuf backs queues for the first few queues of a batch: most
	// batches touch few, and would otherwise grow the slice twice.
	queuesBuf [4]touched
}

// touched is a queue the batch appends to: its next offset after the batch.
type touched struct {
	q     *queue
	next  int64
	bytes int64 // of the records appended (topiclimits_bytes.go)
}

func (b *batchState) queue(q *queue) *touched {
	for i := range b.queues {
		if b.queues[i].q == q {
			return &b.queues[i]
		}
	}
	b.queues = append(b.queues, touched{q: q, next: q.wnext})
	return &b.queues[len(b.queues)-1]
}

// apply decides what batch writes, as of b.now. It reads the writer's
// memory (next offsets, dedup index), the commands and, for an append
// holding an ID twice, the records it may repeat (repeatsStoredApart), and
// changes neither beyond the commands' results: the same stored state,
// batch and time give the same write.
func (e *Engine) apply(b *batchState, batch []*command) {
	records, ids := 0, 0
	for _, c := range batch {
		records += len(c.recs)
		if len(c.dedupIDs) > 0 && (c.kind == cmdAppend || c.kind == cmdDelay) && c.dedupTopic().dedup > 0 {
			ids += len(c.dedupIDs)
		}
	}
	b.entries = make([]store.Entry, 0, records) // one allocation, not one per doubling
	if ids > 0 {
		// The most dedup entries the batch can record (only commands to
		// topics with a window record theirs).
		b.pending = make(map[dedupRef]dedupEntry, ids)
		b.dedup = make([]dedupPut, 0, ids)
	}
	for _, c := range batch {
		switch c.kind {
		case cmdBarrier:
			continue
		case cmdMeta:
			b.meta = append(b.meta, c.meta...)
			b.needSync = b.needSync || c.sync
			continue
		}
		if c.kind == cmdMove && !e.moveInOrder(c) {
			continue
		}
		dest := c.q
		if c.kind == cmdDelay {
			dest = c.target
		}
		if dest.topic.deleted.Load() {
			c.err = fmt.Errorf("%w: %q was deleted", ErrTopicNotFound, dest.topic.name)
			continue
		}
		if c.kind != cmdMove && !dest.writable.Load() {
			// Closed since the send checked it (SetQueueWritable): a due
			// delayed message (cmdMove) was accepted before, and lands.
			c.err = fmt.Errorf("%w: %s/%d", ErrQueueNotWritable, dest.topic.name, dest.id)
			continue
		}
		dup, err := e.dedupCheck(b, c)
		if err != nil {
			c.err = err
			continue
		}
		if dup {
			// The original may have been written without an fsync
			// (SyncNever, SyncInterval, or earlier in this batch): a
			// duplicate under SyncAlways is answered only once an fsync
			// covers it, as a stored send would be, even when the write
			// of its batch is refused (dupSync).
			b.needSync = b.needSync || c.sync
			b.dupSync = b.dupSync || (c.sync && !c.dupInBatch)
			continue
		}
		if c.kind != cmdMove {
			if c.err = b.overLimit(dest.topic, c.recs); c.err != nil {
				continue
			}
		}
		t := b.queue(c.q)
		c.first, c.storedAt = t.next, b.now
		c.moveRefused = false // applied: stored if the write is
		for _, rec := range c.recs {
			if !c.asRead {
				sealRecord(rec, b.now)
			}
			b.entries = append(b.entries, store.Entry{Queue: c.q.key, Offset: uint64(t.next), Value: rec})
			t.next++
			t.bytes += int64(len(rec))
		}
		if c.kind == cmdDelay {
			val := delayIndexValue(c.target)
			for i, at := range c.dues {
				b.meta = append(b.meta, store.MetaOp{Key: delayKey(at, c.first+int64(i)), Value: val})
				if b.firstDue.IsZero() || at.Before(b.firstDue) {
					b.firstDue = at
				}
			}
			e.dedupRecord(b, c, c.target.id, c.first)
		} else {
			e.dedupRecord(b, c, c.q.id, c.first)
		}
		b.meta = append(b.meta, c.meta...)
		b.needSync = b.needSync || c.sync
	}
}

// runBatch applies batch at now, with room left for dedup expiry, writes
// it and makes the writer's memory follow the write, then hands it to the
// completer, which syncs, publishes and completes it in order; waiting
// counts the commands whose callers block until then (command.waits). It
// reports whether expired dedup entries are left, whether the store
// refused the write, and whether it completed the batch itself (inline:
// nothing to wait for).
func (e *Engine) runBatch(batch []*command, waiting int, now time.Time, roomOps, roomBytes int) (expiring, failed, inline bool) {
	// The batch's time as the store keeps it: a wall clock reading, so a
	// send's StoredAt is the same value whether it comes from this write,
	// from the dedup window answering a duplicate, or after a reopen.
	b := &batchState{now: now.Round(0)}
	b.queues = b.queuesBuf[:0]
	e.apply(b, batch)
	expiring = e.planExpiry(b, roomOps, roomBytes)
	if len(batch) == 0 && len(b.meta) == 0 && len(b.expiredOrder) == 0 {
		expiring = false // nothing fits even an empty batch: do not spin
	}
	f := &flight{batch: batch, b: b, waiters: waiting}
	if len(b.entries) > 0 || len(b.meta) > 0 {
		sb := &store.Batch{Entries: b.entries, Meta: b.meta}
		aw, async := e.st.(AsyncWriter)
		switch f.err = e.refusal(sb, async); {
		case f.err != nil:
			// Not written at all.
		case async:
			e.pipe.writes.Add(1)
			f.wait = aw.WriteAsync(sb)
		default:
			e.pipe.writes.Add(1)
			began := time.Now()
			f.err = e.st.Write(sb)
			took := int64(time.Since(began))
			e.pipe.writeNanos.Add(took)
			e.pipe.writeTime.Store((3*e.pipe.writeTime.Load() + took) / 4)
		}
	}
	if f.err != nil {
		// Not stored: memory stays as it was.
		refusedMoves(batch)
		if !errors.Is(f.err, ErrStoreFailed) { // logged once, when the fsync failed
			e.logWriteFailed(len(b.entries), f.err)
		}
		expiring = false
		if errors.Is(f.err, ErrNoSpace) && len(b.entries) > 0 {
			if meta, rest := splitMetaCommands(batch); len(meta) > 0 {
				// A store short of space refuses writes of records but
				// takes metadata alone (offset commits, the watermarks
				// that free space): the metadata commands of this batch
				// must not fail for sharing it with sends. The sends get
				// the refusal; the rest is written again on its own.
				f.batch = rest
				e.handOver(f)
				_, _, inline = e.runBatch(meta, 0, now, roomOps, roomBytes)
				return false, true, inline
			}
		}
	} else {
		e.storeBatch(b)
	}
	return expiring, f.err != nil, e.handOver(f)
}

// splitMetaCommands splits batch into its commands that write no records
// (metadata, barriers) and the others, each in order.
func splitMetaCommands(batch []*command) (meta, rest []*command) {
	for _, c := range batch {
		if c.kind == cmdMeta || c.kind == cmdBarrier {
			meta = append(meta, c)
		} else {
			rest = append(rest, c)
		}
	}
	return meta, rest
}

// handOver completes f at once when there is nothing to wait for, and
// reports so (inline); otherwise it hands f to the completer.
func (e *Engine) handOver(f *flight) (inline bool) {
	if f.wait == nil && !needsSync(f) && e.pipe.inflight.Load() == 0 {
		// Nothing to wait for and nothing written before it outstanding:
		// complete it here, without a hand-off to the completer.
		e.complete(f, nil)
		return true
	}
	e.pipe.inflight.Add(1)
	f.settle = e.pipe.settles.Load()
	e.pipe.flights <- f
	return false
}

// Bounds of letSendersBack: yields per batch; a yield longer than
// slowSenderYield means other goroutines hold the processors (a host
// program using every core), and yields are then off for
// senderYieldsOff (Engine.yieldsOff; tests set another with
// SetSenderYieldsOff).
const (
	maxSenderYields = 8
	slowSenderYield = time.Millisecond
	senderYieldsOff = time.Second
)

// letSendersBack lets the senders the writer has just completed itself
// (a batch with no Sync to wait for) send again before it gathers the next
// batch. Completing a sender makes it runnable on the writer's own P, so
// it runs only once the writer blocks, in its next store write: its next
// request then misses that batch and waits for the one after. The senders
// of each batch come back a batch late, and the writer, never waiting,
// writes them in thirds: in BenchmarkSend (SyncNever, 64 senders) 21–22
// messages per write. Yielding while the queue grows, by up to n requests
// (the senders just completed), lets them queue first, and the writer
// stops yielding as soon as a yield brought nothing (nobody runnable came
// back: open-loop senders, SendAsync), so it never waits on a timer.
//
// A yield puts the writer behind every runnable goroutine. When those
// are busy ones of the host program, one yield can cost a whole
// scheduling quantum (10 ms): in BenchmarkLatency (SyncNever) with two
// spinning goroutines of its own on two cores, p99 rose from 20 ms to
// 20–60 ms. So a yield that takes longer than slowSenderYield turns
// yielding off for senderYieldsOff (*off is the time until which it is
// off; only the writer uses it).
func (e *Engine) letSendersBack(n int, off *time.Time) {
	queued := len(e.writeCh)
	want := min(queued+n, cap(e.writeCh)) // those queued may be another cohort
	if queued >= want {
		return
	}
	began := time.Now()
	if began.Before(*off) {
		return
	}
	for range maxSenderYields {
		runtime.Gosched()
		now, at := len(e.writeCh), time.Now()
		e.pipe.senderYields.Add(1)
		if at.Sub(began) > slowSenderYield {
			*off = at.Add(time.Duration(e.yieldsOff.Load()))
			return
		}
		if now == queued || now >= want {
			return
		}
		queued, began = now, at
	}
}

// refusal returns why sb is not written now, or nil: after a failed fsync
// nothing more is written (storefailure.go; a replicated store refuses on
// its own), and a store that admits writes (WriteAdmitter) may refuse it.
func (e *Engine) refusal(sb *store.Batch, async bool) error {
	if stopped := e.storeFailedErr(); stopped != nil && !async {
		return stopped
	}
	if adm, ok := e.st.(WriteAdmitter); ok {
		return adm.AdmitWrite(sb)
	}
	return nil
}

// storeBatch makes the writer's memory follow a batch the store took (or,
// on an AsyncWriter, is taking): next offsets and dedup entries. Readers
// see the batch only once the completer knows it durable (durableBatch).
func (e *Engine) storeBatch(b *batchState) {
	for _, t := range b.queues {
		t.q.wnext = t.next
		t.q.bytes.commit(t.bytes)
	}
	e.commitDedup(b)
	e.dropDeletedIndexes(b)
}

// durableBatch publishes a stored batch to readers once it is durable. A
// batch of unknown outcome is never published: after a failed fsync the
// engine writes nothing more, so no later fsync could vouch for it
// (storefailure.go); a reopen shows what the store holds. Only the
// completer calls it, in write order.
func (e *Engine) durableBatch(b *batchState, durable bool) {
	if durable {
		for _, t := range b.queues {
			t.q.bytes.publish(t.bytes, t.next)
			t.q.publish(t.next)
		}
	}
	if !b.firstDue.IsZero() {
		e.sched.scheduled(b.firstDue)
	}
}
