package kafka

import (
	"errors"
	"math"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// producers tracks idempotent producers: the sequence numbers each producer
// ID sent to each partition, so a retried batch is acknowledged with its
// first offsets instead of being stored twice. The state is in memory: after
// a restart a producer's next batch is taken as it comes, unless rebuild
// finds the producer's last records in the partition.
type producers struct {
	mu   sync.Mutex
	next int64
	// handedTerm is the leadership term (Server.term) in which the
	// listener last handed producer IDs out, and handedFrom the first ID
	// it handed out in that term, 0 before the first (see handedOut).
	handedTerm uint64
	handedFrom int64
	parts      map[pidPart]*seqState
	// scans holds what rebuild read of each partition it read.
	scans map[scanKey]*partScan
	// lookedUp, set by tests, runs in lock between the lookup of a state
	// and its locking.
	lookedUp func()
}

type pidPart struct {
	pid   int64
	topic string
	part  int32
}

// seqState is one producer's progress on one partition. mu is held from
// the sequence check until the batch's append returned, so batches of one
// producer and partition are checked and stored one at a time.
type seqState struct {
	mu      sync.Mutex
	used    time.Time // last batch checked; idle states expire (see expire)
	term    uint64    // the leadership term the state was learned in (Server.term)
	known   bool
	gone    bool // expired: no longer in producers.parts (see lock)
	epoch   int16
	lastSeq int32
	// topicID is the ID (equeue.TopicInfo.ID) of the topic the state was
	// learned on, 0 when not known (its lookup failed; the next batch
	// stored looks it up again): a state of a topic deleted since, or
	// deleted and made again under its name, is not the new topic's (see
	// conn.storeBatch, forgetDeleted).
	topicID uint32
	// recent holds the last batches stored, for duplicate detection (Kafka
	// clients have at most 5 batches in flight per partition).
	recent [5]storedBatch
	nrec   int
	// partial is the batch whose first records a failed try stored (see
	// partialBatchError), nil when there is none: its retry stores only
	// the others.
	partial *partialStored
	// failedFirst, while the state knows no batch stored (known unset),
	// is the first batch it saw, which failed (see failed): the
	// producer's next batch must be that one again, or a new epoch's
	// first, so that a batch pipelined after it is not stored ahead of
	// it. nil when no batch failed so.
	failedFirst *failedBatch
	// logged, when rebuild learned the state from the partition's
	// records, is where each record of the producer's epoch it read is
	// stored, and what it holds, by sequence number, for retries of
	// batches stored before (see loggedBatch); nil once the state knows
	// as many batches as the producer has in flight at most (recent is
	// full).
	logged map[int32]loggedRecord
	// back is where rebuild's read of the producer's records stopped,
	// for a retry of an earlier batch to read on (conn.readBackTo); nil
	// when rebuild did not read them.
	back *readBack
}

// partialStored is a batch of which a failed try stored the first
// records, known stored: stored of them, from at.
type partialStored struct {
	epoch       int16
	first, last int32
	stored      int
	at          storedAt
}

// failedBatch names a batch of a producer by its epoch and first
// sequence number, with the leadership term it failed in and the end
// offset of its partition before its try (-1 when not known): every record
// the try may have stored is at or above it.
type failedBatch struct {
	epoch int16
	first int32
	term  uint64
	end   int64
}

type storedBatch struct {
	first, last int32
	at          storedAt
	epoch       int16
}

func newProducers() *producers {
	return &producers{parts: map[pidPart]*seqState{}, scans: map[scanKey]*partScan{}}
}

func (c *conn) initProducerID(req *kmsg.InitProducerIDRequest) *kmsg.InitProducerIDResponse {
	resp := kmsg.NewPtrInitProducerIDResponse()
	if req.TransactionalID != nil {
		resp.ErrorCode = errInvalidRequest // no transactions
		resp.ProducerID, resp.ProducerEpoch = -1, -1
		return resp
	}
	p := c.s.pids
	if req.ProducerID >= 0 && req.ProducerEpoch >= 0 && req.ProducerEpoch < math.MaxInt16 {
		// KIP-360: the producer bumps its epoch after an unknown outcome.
		resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
		return resp
	}
	p.mu.Lock()
	// An ID is never below the clock in microseconds, so a listener that
	// starts handing IDs out (after a restart, or on a cluster node that
	// became the leader, possibly started before the last one) gives none
	// that a listener before it gave, as long as their clocks agree to
	// within the time the change took (a failover takes at least an
	// election timeout) and none handed out more than one a microsecond.
	p.next = max(p.next+1, time.Now().UnixMicro())
	resp.ProducerID = p.next
	if term := c.s.term(); p.handedFrom == 0 || p.handedTerm != term {
		p.handedTerm, p.handedFrom = term, p.next
	}
	p.mu.Unlock()
	return resp
}

// handedOut reports whether pid is an ID the listener handed out in
// term: at least the first it handed out in that term, at most the last.
// No record of such a producer was stored before the term (an ID is never
// below the clock when it is handed out: see initProducerID), so those
// the partition holds were stored through the listener in the term,
// which knows of them, and a first batch of such a producer needs no
// read of the partition (see conn.rebuild). A client making IDs up may
// name one in that range: it is taken as it comes, as it would be after
// the read, which finds none of its records.
func (p *producers) handedOut(term uint64, pid int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.handedFrom != 0 && p.handedTerm == term && pid >= p.handedFrom && pid <= p.next
}

// lock returns the locked state of a producer on a partition in the
// leadership term the listener serves in. A state learned in an earlier
// term is forgotten first (see Server.term): the producer's next batch is
// taken as it comes, and a retry of a batch an earlier leader stored is
// caught by the topic's dedup window, which knows its message IDs
// (setIDs). The state itself is kept, so a batch of the earlier term still
// being stored is waited for: one producer's batches to one partition are
// stored one at a time across terms too.
func (p *producers) lock(term uint64, pid int64, topic string, part int32) *seqState {
	k := pidPart{pid, topic, part}
	var st *seqState
	for {
		p.mu.Lock()
		st = p.parts[k]
		if st == nil {
			st = &seqState{term: term}
			p.parts[k] = st
		}
		p.mu.Unlock()
		if p.lookedUp != nil {
			p.lookedUp()
		}
		st.mu.Lock()
		// The expiry may have forgotten st between the lookup and the
		// locking: a batch recorded in it would be recorded in a state
		// nobody finds again (its retry would be stored twice), and the
		// next batch, finding none, would not wait for this one.
		if !st.gone {
			break
		}
		st.mu.Unlock()
	}
	if st.term != term {
		st.term = term
		failed, id := st.failedFirst, st.topicID
		st.reset()
		if failed != nil {
			// Kept for the partition's read to confirm or drop
			// (keepFailedFirst): forgotten here, a batch the producer
			// pipelined after the failed one would be stored ahead of it.
			st.failedFirst, st.topicID = failed, id
		}
	}
	st.used = time.Now()
	return st
}

// reset forgets what st knows of its producer's batches: the next one is
// taken as it comes.
func (st *seqState) reset() {
	st.known, st.topicID, st.epoch, st.lastSeq, st.nrec, st.partial, st.logged, st.back = false, 0, 0, 0, 0, nil, nil, nil
	st.failedFirst = nil
}

// forgetUnknown drops st, the state of producer pid on a partition,
// locked by the caller, when no batch of the producer was stored there (a
// first batch failed: the topic or partition may not exist): a client
// naming topics and partitions that do not exist leaves nothing behind.
// The producer's next batch is taken as it comes, as it would be with st.
// A state that knows of records stored in part is kept, and so is one
// whose first batch failed otherwise (failedFirst), which orders the
// producer's next batches after it.
func (p *producers) forgetUnknown(pid int64, topic string, part int32, st *seqState) {
	if st.known || st.partial != nil || st.failedFirst != nil {
		return
	}
	k := pidPart{pid, topic, part}
	p.mu.Lock()
	if p.parts[k] == st {
		delete(p.parts, k)
	}
	st.gone = true
	p.mu.Unlock()
}

// producerIdle is how long a producer's sequence state is kept after its
// last batch to a partition (Kafka's producer.id.expiration.ms default).
const producerIdle = 24 * time.Hour

// expire forgets the state of producers idle on a partition since before
// now-idle; a batch they send later is taken as it comes.
func (p *producers) expire(now time.Time, idle time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, st := range p.parts {
		if st.mu.TryLock() {
			if now.Sub(st.used) > idle {
				delete(p.parts, k)
				st.gone = true
			}
			st.mu.Unlock()
		}
	}
}

// forgetTopic drops the states of every producer on the partitions of
// topic, deleted through the listener, rather than keep them until they
// expire (producerIdle after their last batch), and what rebuild read of
// them (scans). A state locked by a batch
// being stored is left to the expiry.
func (p *producers) forgetTopic(topic string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, st := range p.parts {
		if k.topic == topic && st.mu.TryLock() {
			delete(p.parts, k)
			st.gone = true
			st.mu.Unlock()
		}
	}
	for k := range p.scans {
		if k.topic == topic {
			delete(p.scans, k)
		}
	}
}

// forgetDeleted drops the states of topics that are not in live (topic
// name -> ID), or that have another ID there, learned before listed, when
// live was listed: the topic was deleted (or deleted and made again) since
// outside the listener. A state whose topic ID is not known (its lookup
// failed) is dropped when its topic is not in live, whichever topic of
// that name it was learned on; while one is, it is left to the
// producer's next batch, which looks the ID up again (conn.storeBatch). A
// state used since the listing, or locked by a batch being stored, is
// left alone. What rebuild read of such topics' partitions (scans), read
// before the listing, goes too.
func (p *producers) forgetDeleted(live map[string]uint32, listed time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, st := range p.parts {
		if !st.mu.TryLock() {
			continue
		}
		if id, ok := live[k.topic]; st.used.Before(listed) && (!ok || st.topicID != 0 && id != st.topicID) {
			delete(p.parts, k)
			st.gone = true
		}
		st.mu.Unlock()
	}
	for k, sc := range p.scans {
		if id, ok := live[k.topic]; sc.made.Before(listed) && (!ok || id != sc.topicID) {
			delete(p.scans, k)
		}
	}
}

// check decides what to do with a batch: store it (code 0, dup false),
// acknowledge it as already stored as first says (dup true), or refuse it. A
// producer's first batch is taken at any sequence number (its state may
// have been forgotten, and rebuild found none of its records), unless one
// before it failed (checkAfterFailedFirst); a retry of
// records rebuild read is a duplicate too (loggedBatch), and one that
// records rebuild read corrupt may hide is refused KAFKA_STORAGE_ERROR
// (hiddenByCorrupt); its first batch in a new epoch must start at 0, as
// in Kafka (ProducerAppendInfo.checkSequence): a batch the producer sent
// after a failed one is then refused too, and not stored ahead of it.
func (st *seqState) check(b *producedBatch) (first storedAt, dup bool, code int16) {
	if !st.known {
		return st.checkAfterFailedFirst(b)
	}
	if b.producerEpoch > st.epoch {
		if b.firstSeq != 0 {
			return storedAt{}, false, errOutOfOrderSequence
		}
		return storedAt{}, false, errNone
	}
	if b.producerEpoch < st.epoch {
		return storedAt{}, false, errInvalidProducerEpoch
	}
	for i := range st.nrec {
		r := st.recent[i]
		if r.epoch == b.producerEpoch && r.first == b.firstSeq && r.last == b.lastSeq() {
			return r.at, true, errNone
		}
	}
	if at, ok := st.loggedBatch(b); ok {
		return at, true, errNone
	}
	if st.hiddenByCorrupt(b) {
		return storedAt{}, false, errKafkaStorageError
	}
	if st.storedBeyondRead(b) {
		return storedAt{}, false, errDuplicateSequence
	}
	want := st.lastSeq + 1
	if st.lastSeq == math.MaxInt32 {
		want = 0
	}
	if b.firstSeq != want {
		return storedAt{}, false, errOutOfOrderSequence
	}
	return storedAt{}, false, errNone
}

// checkAfterFailedFirst checks a batch of a producer whose state knows no
// batch stored: taken as it comes, unless the first batch the state saw
// failed (failedFirst). Then, as Kafka checks a producer's batches, the
// batch must be that one again (its retry), or the first of a later epoch
// (sequence 0), else it is refused OUT_OF_ORDER_SEQUENCE_NUMBER: a batch
// the producer sent after the failed one must not be stored ahead of it.
// One of an earlier epoch gets INVALID_PRODUCER_EPOCH.
func (st *seqState) checkAfterFailedFirst(b *producedBatch) (storedAt, bool, int16) {
	f := st.failedFirst
	switch {
	case f == nil:
		return storedAt{}, false, errNone
	case b.producerEpoch < f.epoch:
		return storedAt{}, false, errInvalidProducerEpoch
	case b.producerEpoch > f.epoch && b.firstSeq != 0, b.producerEpoch == f.epoch && b.firstSeq != f.first:
		return storedAt{}, false, errOutOfOrderSequence
	}
	return storedAt{}, false, errNone
}

// storedPart returns how many of b's first records an earlier try stored,
// and where; 0 when none.
func (st *seqState) storedPart(b *producedBatch) (int, storedAt) {
	p := st.partial
	if p == nil || p.epoch != b.producerEpoch || p.first != b.firstSeq || p.last != b.lastSeq() || p.stored >= len(b.msgs) {
		return 0, storedAt{}
	}
	return p.stored, p.at
}

// failed records a try of b that failed. While no batch of the producer
// is known stored, the next one must be b again (failedFirst), in later
// leadership terms too (keepFailedFirst). A failure after some of its
// first records were stored, its outcome otherwise known (the chunk
// that failed was not stored), is kept, so the batch's retry stores the
// others only, once. After an unknown outcome what was known before is
// kept: the retry then tries again what the failed try may have stored,
// as it does a batch whose one append had an unknown outcome.
//
// end is the partition's end offset before the try (-1 when not known).
func (st *seqState) failed(b *producedBatch, err error, end int64) {
	if !st.known && !errors.Is(err, equeue.ErrTopicNotFound) && !errors.Is(err, equeue.ErrQueueNotFound) {
		// Nothing of the producer is known stored: its next batch must
		// be this one again (checkAfterFailedFirst). A partition that
		// does not exist keeps no state (forgetUnknown).
		st.failedFirst = &failedBatch{epoch: b.producerEpoch, first: b.firstSeq, term: st.term, end: end}
	}
	var partial *partialBatchError
	if errors.Is(err, equeue.ErrIndeterminate) || !errors.As(err, &partial) {
		return
	}
	st.partial = &partialStored{epoch: b.producerEpoch, first: b.firstSeq, last: b.lastSeq(), stored: partial.stored, at: partial.at}
}

// stored records a batch stored as at says.
func (st *seqState) stored(b *producedBatch, at storedAt) {
	st.partial, st.failedFirst = nil, nil
	if b.producerEpoch != st.epoch {
		st.nrec, st.logged = 0, nil
	}
	st.known, st.epoch, st.lastSeq = true, b.producerEpoch, b.lastSeq()
	rec := storedBatch{first: b.firstSeq, last: b.lastSeq(), at: at, epoch: b.producerEpoch}
	if st.nrec < len(st.recent) {
		st.recent[st.nrec] = rec
		st.nrec++
		return
	}
	copy(st.recent[:], st.recent[1:])
	st.recent[len(st.recent)-1] = rec
	st.logged = nil
}

// keepFailedFirst decides, after the partition's read (conn.rebuild) in a
// term later than the one in which the producer's first batch failed
// (failedFirst), whether the producer's next batch must still be that one
// again. The read found none of the producer's records (st still knows of
// none): when it began at or below the partition's end before the failed
// try (floor <= end), no leader stored the batch, nor any of the
// producer's, since, and the failure still orders the producer's next
// batches. When it began above (more records were stored since than it
// reads, rebuildScan), another leader may have stored the batch's retry
// and later ones: the failure is forgotten and the batch taken as it
// comes, as before the failure was kept across terms. A read not made
// (floor -1: the topic or partition is not there) keeps it: the batch is
// refused rather than stored ahead. (A read that failed refuses the batch
// before: conn.storeBatch.)
func (st *seqState) keepFailedFirst(term uint64, floor int64) {
	f := st.failedFirst
	if f == nil || st.known || f.term == term || floor < 0 {
		return
	}
	if f.end < 0 || floor > f.end {
		st.failedFirst = nil
		return
	}
	f.term = term // confirmed for this term: not read again
}
