package equeue

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Commands. Every change of stored state that goes through the writer is a
// command: a value that says what it will write before it is queued. Its
// cost (store operations and bytes, counted as store.Limits.Cost counts
// them) is known when it is built, so the writer packs whole commands into
// batches that fit the store's limits, and a command too large for any
// batch is refused before it is queued. The writer applies a batch as one
// store write (see writer.go): every command in it is stored, or none is.
//
//	kind         writes                                         cost (ops)
//	cmdAppend    records to a queue, dedup entries, extra meta  recs + groups + meta
//	cmdDelay     records to the delay log, one index key each,  2*recs + groups
//	             dedup entries of the destination topic
//	cmdMove      one due record to its queue, index key deleted recs + meta
//	cmdMeta      metadata (topics, groups, offsets, watermarks) meta
//	cmdBarrier   nothing; completes after what was queued before 0
//
// groups: the dedup groups the command's IDs can start at most (dedupCost;
// its cost is an upper bound there, exact everywhere else). Dedup expiry
// is planned by the writer itself from the room left in a batch (dedup.go),
// so it never takes room a sender needs.
type cmdKind uint8

const (
	cmdAppend cmdKind = iota
	cmdDelay
	cmdMove
	cmdMeta
	cmdBarrier
)

// command is one unit of change. The fields above the results are set
// before it is queued and not changed after; the writer fills the results
// and then calls done, signals signal, or closes doneCh.
type command struct {
	kind cmdKind
	q    *queue // append, move: the destination; delay: the delay log
	recs [][]byte
	sync bool
	// internal marks scheduler work: the writer bounds it per batch.
	internal bool
	// asRead marks a cmdMove whose record failed its check (scanRecord):
	// the writer stores it as it was read, not sealed again, so pulls
	// report it corrupt instead of delivering the damage under a new
	// checksum.
	asRead bool
	// meta is written as is with the records: redrive marks, a move's index
	// deletion, or the whole change of a cmdMeta.
	meta []store.MetaOp
	// dues and target describe a cmdDelay: each record's delivery time and
	// the queue it will be moved to.
	dues   []time.Time
	target *queue
	// dedupIDs are the producer-supplied IDs of a send to a topic with a
	// dedup window (the target's topic for a delayed send), one per record:
	// "" for a message whose ID the engine generated (dedupIDsOf). dedupBypass
	// records them without checking the window (a redriven dead letter is
	// sent again on purpose).
	dedupIDs    []string
	dedupBypass bool
	// trimsAfter marks an append whose sender trims the topic to its
	// limit itself (topiclimits.go), so the writer need not ask for it.
	trimsAfter bool
	// detached marks an append whose caller does not wait for it
	// (Producer.SendAsync): see waits.
	detached bool
	// after is, for a scheduler move, the move queued before it to the
	// same queue in the same pass: it is stored only if that one was, so
	// the queue gets the messages in their order (delay_order.go).
	after *command
	// moveRefused marks a move the writer did not store: refused when it
	// applied it, or in a write the store refused. Only the writer
	// goroutine reads or writes it.
	moveRefused bool

	ops, bytes int // store cost (exact, or at most for dedup groups), set by seal

	// Results.
	first     int64 // first offset (append, move), first delay-log slot (delay)
	storedAt  time.Time
	duplicate bool
	// dupInBatch marks a duplicate of IDs recorded by its own batch: it
	// then shares the batch's outcome, while one of earlier writes only
	// names messages already stored (Engine.complete).
	dupInBatch bool
	dupQueue   int
	err        error
	done       func(*command) // called by the writer when set
	doneCh     chan struct{}  // else closed by the writer
	// signal, set on the pooled commands of Append (getCommand), is sent
	// one value per completion instead: it is buffered, so the writer never
	// blocks on it, and unlike a closed channel it serves the next use.
	signal chan struct{}

	rec1 [1][]byte // backing arrays for one-message appends
	id1  [1]string
	msg1 [1]*Message // the request of a one-message send (Engine.sendOne)
}

// delayIndexValueLen is the length of a delay index value: topic id, queue.
const delayIndexValueLen = 8

// dedupTopic is the topic whose window c's IDs are checked against.
func (c *command) dedupTopic() *topic {
	if c.kind == cmdDelay {
		return c.target.topic
	}
	return c.q.topic
}

// seal computes c's store cost under l: exact, and for dedup groups at
// most what they take.
func (c *command) seal(l store.Limits) {
	ops, bytes := len(c.recs)+len(c.meta), 0
	for _, r := range c.recs {
		bytes += l.ValueCost(len(r))
	}
	for _, m := range c.meta {
		bytes += len(m.Key) + len(m.Value)
	}
	if c.kind == cmdDelay {
		ops += len(c.recs)
		bytes += len(c.recs) * (len(keyDelayPrefix) + 16 + delayIndexValueLen)
	}
	if len(c.dedupIDs) > 0 {
		o, n := dedupCost(c.dedupIDs, dedupGroupLimit(l))
		ops, bytes = ops+o, bytes+n
	}
	c.ops, c.bytes = ops, bytes
}

// recordBytes is the encoded size of c's records, what QueueStats'
// AppendedBytes counts: its store cost (c.bytes) weighs a record in the
// value log as a pointer and adds the metadata written with it.
func (c *command) recordBytes() int {
	n := 0
	for _, r := range c.recs {
		n += len(r)
	}
	return n
}

// fits refuses a command that no batch can hold.
func (e *Engine) fits(c *command) error {
	maxOps, maxBytes := e.batchLimits()
	if c.ops > maxOps || c.bytes > maxBytes {
		return fmt.Errorf("%w: %d store operations, %d bytes; one write holds at most %d operations and %d bytes",
			ErrBatchTooLarge, c.ops, c.bytes, maxOps, maxBytes)
	}
	return nil
}

// enqueue hands c to the writer. When it returns an error, c was not
// queued and nothing of it is stored.
func (e *Engine) enqueue(ctx context.Context, c *command) error {
	if ctx.Done() == nil { // no cancellation: skip the ctx case
		select {
		case e.writeCh <- c:
			e.enqueued()
			return nil
		case <-e.writerDone:
			return ErrClosed
		}
	}
	select {
	case e.writeCh <- c: // fast path: the queue has room
		e.enqueued()
		return nil
	default:
	}
	select {
	case e.writeCh <- c:
		e.enqueued()
		return nil
	case <-e.writerDone:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait waits for the writer to complete c (queued with doneCh set) and
// returns c's error. completed is false when ctx ended first (the outcome
// is unknown: an error matching ErrIndeterminate and ctx's error) or the
// writer stopped before it took c (not stored: ErrClosed).
func (e *Engine) wait(ctx context.Context, c *command) (completed bool, err error) {
	select {
	case <-c.doneCh:
		return true, c.err
	case <-e.writerDone:
		select {
		case <-c.doneCh:
			return true, c.err
		default:
			return false, ErrClosed
		}
	case <-ctx.Done():
		select { // completed as ctx ended: the outcome is known
		case <-c.doneCh:
			return true, c.err
		default:
			return false, queuedUnknown(ctx.Err())
		}
	}
}

// submit is the one enqueue-and-wait path: it refuses c if it cannot fit,
// queues it, and waits for the writer.
func (e *Engine) submit(ctx context.Context, c *command) error {
	_, err := e.submitLeft(ctx, c)
	return err
}

// submitLeft is submit that also returns, when ctx ended while c was
// queued or being written (its outcome unknown), a channel closed once the
// writer is done with it; nil otherwise.
func (e *Engine) submitLeft(ctx context.Context, c *command) (left <-chan struct{}, err error) {
	if err := e.fits(c); err != nil {
		return nil, err
	}
	c.doneCh = make(chan struct{})
	if err := e.enqueue(ctx, c); err != nil {
		return nil, err
	}
	done := c.doneCh
	completed, err := e.wait(ctx, c)
	if !completed {
		return done, err
	}
	return nil, err
}

// complete reports c to whoever waits for it. The writer does not touch c
// after this: a pooled command may be in use again at once.
func (c *command) complete() {
	switch {
	case c.done != nil:
		c.done(c)
	case c.signal != nil:
		c.signal <- struct{}{}
	case c.doneCh != nil:
		close(c.doneCh)
	}
}

// waits reports whether c's caller may come back as soon as the writer
// completes it: a blocked Send or Append, or an append whose caller waits
// for its callback (the remote server's, carrying a client's call). Such
// senders, acknowledged by one Sync, come back together, and the writer
// lingers for them (writer_cohort.go). A Producer's SendAsync does not
// wait: its sends come on their own schedule, and lingering for them only
// adds latency.
func (c *command) waits() bool { return !c.detached }

// commandPool recycles the commands of synchronous appends, with their
// signal channels: a send would otherwise allocate both every time.
var commandPool = sync.Pool{New: func() any { return &command{signal: make(chan struct{}, 1)} }}

// getCommand returns a zeroed command with a signal channel, to be given
// back with release once the writer is done with it.
func getCommand() *command { return commandPool.Get().(*command) }

// release gives back a command from getCommand. Call it only when the
// writer never had c (it was not queued) or completed it and its signal
// was received; a command whose waiter gave up is left to the collector,
// since the writer may still hold it.
func (c *command) release() {
	signal := c.signal
	*c = command{signal: signal}
	commandPool.Put(c)
}

// awaitSignal waits for the writer to complete c, a pooled command queued
// by a caller between enter and leave, and reports false when ctx ended
// first (the outcome is unknown). It need not watch writerDone as wait
// does: Close waits for every caller between enter and leave before it
// stops the writer, and the writer completes everything queued before that.
func awaitSignal(ctx context.Context, c *command) bool {
	done := ctx.Done()
	if done == nil {
		<-c.signal
		return true
	}
	select {
	case <-c.signal:
		return true
	case <-done:
		select { // completed as ctx ended: the outcome is known
		case <-c.signal:
			return true
		default:
			return false
		}
	}
}

// metaCommand writes ops, synced under SyncAlways.
func (e *Engine) metaCommand(ops []store.MetaOp, internal bool) *command {
	c := &command{kind: cmdMeta, meta: ops, sync: e.opts.Sync.kind == syncAlways, internal: internal}
	c.seal(e.limits)
	return c
}

// barrier returns once every command queued before it has been written.
func (e *Engine) barrier(ctx context.Context) error {
	return e.submit(ctx, &command{kind: cmdBarrier})
}
