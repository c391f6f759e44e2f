package kafka

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/equeue-go/equeue"
)

// rebuildScan is how many of a partition's last records the listener
// reads, at most, to learn what an idempotent producer it keeps no state
// of stored there last (see rebuild).
const rebuildScan = 16 * equeue.MaxPullBatch

// rebuild learns from the partition's last records (rebuildScan at most)
// what the producer of b, a batch it sent, stored there last, for st, the
// producer's state there, which knows nothing: the listener restarted, or
// forgot the state, while the producer went on. Its records carry message
// IDs naming the producer, its epoch and their sequence numbers (setIDs),
// each with the mark by which only records the listener stored are read
// as the producer's (recordMarks: a native message named like them moved
// the state to its sequence number or epoch, and the producer's next
// batch was refused), so, as Kafka rebuilds its producers' state from its log, st then knows
// the producer's epoch and last sequence number, and where each of the
// producer's records of that epoch read is stored (seqState.logged). A batch the producer sent
// ahead of one that was not stored is then refused
// OUT_OF_ORDER_SEQUENCE_NUMBER, as from Kafka, and the client sends it
// again after the other; taken as it came, the other was refused instead,
// and franz-go, that batch being its first in flight, bumped its epoch
// and sent its records again under new sequence numbers, which no dedup
// window recognizes: those stored were stored twice. A retry of records
// stored is acknowledged where they are, when they hold what the retry
// does (loggedRecord): a native producer may give its message an ID that
// reads as the producer's, and a batch at that sequence number is then
// not taken for stored. Records a Kafka record cannot make (a delivery
// time, an attempt, system properties) are not read as the producer's at
// all (listenerShaped); an expiry, which the engine gives the listener's
// records on a topic with a DefaultTTL, does not keep a record from
// being read as the producer's. When none of the records read is
// the producer's (or they cannot be read), st is left as it was and the
// batch is taken as it comes, unless a first batch of the producer failed
// in an earlier term (keepFailedFirst).
//
// It returns the offset from which the partition's last records were
// read, -1 when the topic or partition does not exist (the batch's
// append then meets it), or, with the error, when they, or the
// producer's, could not be read: st is then left knowing nothing, and
// the batch is refused (storeBatch), not taken as it comes, since its
// records may be stored already.
//
// The partition's last records are read once a leadership term (see
// partScan), whichever producers ask: a producer's records stored since
// were stored through the listener, which then knows its state. A
// producer found there has the records before its last read once more,
// the first time it asks: as many as b has, MaxPullBatch at least, so
// that the first records of b stored before a restart cut it off are
// read (see resumeLogged), and none below the partition's read
// (rebuildScan records at most). So a client sending batches under
// producer IDs it makes up costs no more than one read of the partition.
func (c *conn) rebuild(topic string, part int32, b *producedBatch, st *seqState) (int64, error) {
	pid := b.producerID
	id, q, err := c.topicPart(topic, part)
	if errors.Is(err, equeue.ErrTopicNotFound) || errors.Is(err, equeue.ErrInvalidName) || errors.Is(err, equeue.ErrQueueNotFound) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	sc := c.s.pids.scanOf(topic, part, c.s.term(), id)
	defer sc.mu.Unlock()
	h := c.s.marks.mac()
	if sc.last == nil {
		last := map[int64]int64{}
		floor := max(q.MinOffset, q.MaxOffset-rebuildScan)
		legacyBelow := q.MaxOffset
		_, _, err := c.readRecords(topic, q.ID, floor, q.MaxOffset, func(m *equeue.Message) {
			p, marked, ok := ownProducer(h, topic, part, m, legacyBelow)
			if !ok {
				return
			}
			if marked {
				legacyBelow = min(legacyBelow, m.Offset)
			}
			last[p] = m.Offset
		})
		if err != nil {
			return -1, err
		}
		sc.floor, sc.last, sc.legacyBelow = floor, last, legacyBelow
	}
	off, ok := sc.last[pid]
	if !ok {
		return sc.floor, nil
	}
	prefix := "kafka-" + strconv.FormatInt(pid, 10) + "-"
	back := int64(max(len(b.msgs), equeue.MaxPullBatch))
	// The producer's records are read back as far as its batches in
	// flight may reach, as many as b has each, below the partition's
	// read if need be: a batch larger than that read is found too.
	own := max(q.MinOffset, min(sc.floor, off+1-inFlightBatches*back))
	lo := max(own, off+1-back)
	lowest := int32(-1) // the sequence number read furthest back in st's epoch
	unshaped := false   // a record named as the producer's that the listener did not store
	var passed int64    // offsets the read passed by: see readBack
	var corrupt bool    // whether some of them were corrupt
	passed, corrupt, err = c.readRecords(topic, q.ID, lo, off+1, func(m *equeue.Message) {
		epoch, seq, named, own := producerRecord(h, topic, prefix, part, m, sc.legacyBelow)
		if !named {
			return
		}
		if !own {
			unshaped = true
			return
		}
		l := loggedOf(m)
		switch {
		case !st.known || epoch > st.epoch:
			st.known, st.epoch, st.lastSeq = true, epoch, seq
			st.logged = map[int32]loggedRecord{seq: l}
			lowest = seq
		case epoch == st.epoch:
			st.lastSeq = seq // read in offset order: the last read is the last stored
			st.logged[seq] = l
		}
	})
	if err == nil && st.logged != nil {
		// The record read furthest back, sequence numbers wrapping
		// around (a producer's go from math.MaxInt32 back to 0).
		for seq := range st.logged {
			if seqBelow(st.lastSeq, seq) > seqBelow(st.lastSeq, lowest) {
				lowest = seq
			}
		}
		// A floor at the partition's first offset, none of its records
		// deleted or lost, reaches every record the partition held, if
		// it still is once the read reached it (confirmWhole).
		fromFirst := own == 0 && q.Messages == q.MaxOffset && !unshaped && passed == 0
		st.back = &readBack{floor: own, from: lo, lowest: lowest, fromFirst: fromFirst, corrupt: corrupt, legacyBelow: sc.legacyBelow}
		err = c.readBackTo(topic, part, b, st)
	}
	if err == nil && st.hiddenByCorrupt(b) {
		// Refused as a failed read is, the producer left to read again:
		// its next try reads the records afresh.
		err = errCorruptRead
	}
	if err != nil {
		return -1, err
	}
	if st.known {
		// The state names the topic it was learned on, as one learned by
		// storing a batch does (seqState.topicID): once the topic is
		// deleted and made again, a retry it takes for stored, or
		// refuses, is the new topic's first batch (topicReplaced), not
		// acknowledged for records the new topic does not hold.
		st.topicID = id
	}
	delete(sc.last, pid)
	return sc.floor, nil
}

// inFlightBatches is how many batches a producer has in flight to a
// partition at most (Kafka's max.in.flight.requests.per.connection with
// idempotence), whose answers a restart of the listener may lose together.
const inFlightBatches = 5

// readBack is where rebuild's read of a producer's records stopped: it
// may read down to floor, read from offset from, and the sequence number
// of the producer's epoch it found furthest back (seqBelow) is lowest.
// fromFirst says floor was the partition's first offset, 0, and none of
// its records was deleted (retention, a topic limit) or lost, when rebuild
// read the partition's bounds, before it read its records, and that the
// read met no record named as the producer's that it does not take for
// one (producerRecord: a native producer's message without the
// listener's mark, or with a delivery time, an attempt or system
// properties), nor passed any offset by (readRecords: an
// expired record, a corrupt one, one the store did not give): the
// partition may hold the producer's batches there.
// whole says the read reached floor and the bounds, read again after
// it, still showed none deleted or lost (confirmWhole): the read has seen
// every record the partition held, and each of the producer's.
// corrupt says the read passed by records the engine found corrupt
// (equeue.PullResult.Corrupt): any of them may be one of the producer's
// (hiddenByCorrupt).
// legacyBelow is partScan.legacyBelow: records without a mark below it
// are read as the producer's (legacyRecord).
type readBack struct {
	floor, from int64
	lowest      int32
	fromFirst   bool
	whole       bool
	corrupt     bool
	legacyBelow int64
}

// seqAhead is how far behind a producer's last sequence number a batch's
// first must be, at most, to be taken for one stored before it (seqBelow):
// one further is ahead of it, sequence numbers having wrapped around.
const seqAhead = 1 << 30

// seqBelow is how far seq lies behind last, a producer's sequence numbers
// going from math.MaxInt32 back to 0: 0 for last itself, 1 for the one
// before, math.MaxInt32 for the one after.
func seqBelow(last, seq int32) int64 {
	d := int64(last) - int64(seq)
	if d < 0 {
		d += math.MaxInt32 + 1
	}
	return d
}

// readBackTo goes on reading the partition's records below where rebuild
// stopped (st.back), down to the partition's read at most, while b, a
// batch of st's epoch, starts further behind the producer's last sequence
// number than any read (seqBelow, across the wrap from math.MaxInt32 to
// 0; a batch ahead of the last is no retry and reads nothing): b is
// then the retry of a batch stored before the last ones (a producer has
// up to five in flight, whose answers a restart of the listener lost
// together), and its records are to be known stored (seqState.logged),
// so that its retry is acknowledged where it was stored. Read from the
// producer's last records alone, the retry was refused
// OUT_OF_ORDER_SEQUENCE_NUMBER, and franz-go sent every record in flight
// again under a new epoch, storing them twice. Each step reads back at
// least as many records as the producer's missing ones, so the read stops
// at b's first record, or at r.floor: the partition's read (rebuildScan
// records), or inFlightBatches times b's size below the producer's last
// record when that is further back, which bounds what rebuild costs; a
// batch stored further back is not found.
//
// When b still lies behind the records read, and the read reached the
// partition's first offset, confirmWhole tells whether the partition may
// have held b (see storedBeyondRead).
func (c *conn) readBackTo(topic string, part int32, b *producedBatch, st *seqState) error {
	r := st.back
	if r == nil || !st.known || b.producerEpoch != st.epoch || b.firstSeq < 0 {
		return nil
	}
	prefix := "kafka-" + strconv.FormatInt(b.producerID, 10) + "-"
	last := st.lastSeq
	want := seqBelow(last, b.firstSeq)
	if want >= seqAhead {
		return nil // ahead of the last record: no retry
	}
	h := c.s.marks.mac()
	for st.logged != nil && seqBelow(last, r.lowest) < want && r.from > r.floor {
		hi := r.from
		lo := max(r.floor, hi-(want-seqBelow(last, r.lowest)))
		passed, corrupt, err := c.readRecords(topic, int(part), lo, hi, func(m *equeue.Message) {
			epoch, seq, named, own := producerRecord(h, topic, prefix, part, m, r.legacyBelow)
			if !named {
				return
			}
			if !own {
				r.fromFirst = false // see readBack
				return
			}
			if epoch != st.epoch {
				return
			}
			if _, seen := st.logged[seq]; !seen {
				st.logged[seq] = loggedOf(m)
			}
			if seqBelow(last, seq) > seqBelow(last, r.lowest) {
				r.lowest = seq
			}
		})
		if err != nil {
			return err
		}
		if passed > 0 {
			r.fromFirst = false // see readBack
		}
		r.corrupt = r.corrupt || corrupt
		r.from = lo
	}
	if seqBelow(last, r.lowest) < want {
		return c.confirmWhole(topic, part, r)
	}
	return nil
}

// confirmWhole sets r.whole when r's read reached the partition's first
// offset (r.floor, r.fromFirst) and the partition's bounds, read now,
// still show none of its records deleted or lost: they were not, before
// or while the read went down to it (a low watermark never goes back), so
// the read saw every record the partition held. Read before the read
// alone, the bounds did not show records deleted since (retention, a
// topic limit): a batch stored, then deleted, was taken for one the
// partition never held, refused OUT_OF_ORDER_SEQUENCE_NUMBER, and
// franz-go stored it again under a new epoch. Once the bounds show
// records deleted or lost, they are not read again.
func (c *conn) confirmWhole(topic string, part int32, r *readBack) error {
	if !r.fromFirst || r.whole || r.from > r.floor {
		return nil
	}
	q, err := c.queueInfo(topic, part)
	if err != nil {
		return err
	}
	r.whole = q.MinOffset == 0 && q.Messages == q.MaxOffset
	r.fromFirst = r.whole
	return nil
}

// readRecords calls fn with each record of the queue from offset lo to
// hi, hi excluded, in offset order, and returns how many offsets of the
// range it passed by, giving fn no record: those a pull passes by (below
// the queue's low watermark, expired, corrupt, not given by the store),
// and those above where a pull stopped short; corrupt says some of them
// were records the engine found corrupt. It stops at the first failed
// read and returns its error.
func (c *conn) readRecords(topic string, queue int, lo, hi int64, fn func(*equeue.Message)) (passed int64, corrupt bool, err error) {
	given := int64(0)
	for off := lo; off < hi; {
		res, err := c.s.b.Pull(c.ctx, &equeue.PullRequest{Topic: topic, Queue: queue, Offset: off, Max: int(min(hi-off, equeue.MaxPullBatch))})
		if err != nil {
			return 0, false, err
		}
		for _, o := range res.Corrupt {
			corrupt = corrupt || o >= lo && o < hi
		}
		if res.NextOffset <= off {
			break
		}
		for _, m := range res.Messages {
			if m.Offset >= hi {
				break
			}
			fn(m)
			given++
		}
		off = res.NextOffset
	}
	return max(hi-lo, 0) - given, corrupt, nil
}

// producerOf parses a message ID that setIDs gave a record on part,
// without its mark (unmark): the ID of its producer; ok is false for any
// other ID.
func producerOf(id string, part int32) (pid int64, ok bool) {
	rest, ok := strings.CutPrefix(id, "kafka-")
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.ParseInt(p, 10, 64)
	if err != nil || pid < 0 {
		return 0, false
	}
	if _, _, ok := producerSeqOf(id, "kafka-"+p+"-", part); !ok {
		return 0, false
	}
	return pid, true
}

// producerSeqOf parses a message ID that setIDs gave a record of the
// producer whose IDs start with prefix, on part, without its mark
// (unmark): its epoch and sequence number; ok is false for any other ID.
func producerSeqOf(id, prefix string, part int32) (epoch int16, seq int32, ok bool) {
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok {
		return 0, 0, false
	}
	fields := strings.Split(rest, "-")
	if len(fields) != 3 || fields[1] != strconv.Itoa(int(part)) {
		return 0, 0, false
	}
	e, err1 := strconv.ParseInt(fields[0], 10, 16)
	s, err2 := strconv.ParseInt(fields[2], 10, 32)
	if err1 != nil || err2 != nil || e < 0 || s < 0 {
		return 0, 0, false
	}
	return int16(e), int32(s), true
}

// loggedBatch returns where b's records are stored when rebuild read them
// all, consecutive, in b's epoch, each holding what b's does
// (loggedRecord.matches): b is a retry of a batch stored. A record read
// under one of b's sequence numbers that holds something else (a native
// producer's message named like the producer's records) is not taken
// for b's: b is then checked as a batch not stored.
func (st *seqState) loggedBatch(b *producedBatch) (storedAt, bool) {
	if st.logged == nil || b.producerEpoch != st.epoch {
		return storedAt{}, false
	}
	first, ok := st.logged[b.firstSeq]
	if !ok {
		return storedAt{}, false
	}
	for i, m := range b.msgs {
		l, ok := st.logged[seqAt(b, i)]
		if !ok || l.at.base != first.at.base+int64(i) || !l.matches(m) {
			return storedAt{}, false
		}
	}
	return first.at, true
}

// resumeLogged makes b's try store only the records of b that rebuild did
// not read, when it read b's first records, but not all of them, stored
// consecutively in b's epoch, each holding what b's does
// (loggedRecord.matches), and none of the producer's after them: the
// listener stored them before it restarted (or lost its leadership) in
// the middle of b, a batch larger than one store write (appendChunks).
// The state is then as after a try that failed there (seqState.failed):
// b is the next batch expected, and its retry stores the others only,
// acknowledged at b's first offset. Taken as a batch ahead of the last
// record read, b was refused OUT_OF_ORDER_SEQUENCE_NUMBER, and franz-go
// then sent its records again under a new epoch, storing those stored
// twice; a first batch (sequence 0) was stored whole. A batch whose
// sequence numbers wrap around is left to check.
func (st *seqState) resumeLogged(b *producedBatch) {
	if st.logged == nil || st.partial != nil || b.producerEpoch != st.epoch {
		return
	}
	last := b.lastSeq()
	if b.firstSeq < 0 || last < b.firstSeq || st.lastSeq < b.firstSeq || st.lastSeq >= last {
		return
	}
	first, ok := st.logged[b.firstSeq]
	if !ok {
		return
	}
	n := st.lastSeq - b.firstSeq + 1
	for i := range n {
		l, ok := st.logged[b.firstSeq+i]
		if !ok || l.at.base != first.at.base+int64(i) || !l.matches(b.msgs[i]) {
			return
		}
	}
	st.partial = &partialStored{epoch: b.producerEpoch, first: b.firstSeq, last: last, stored: int(n), at: first.at}
	st.lastSeq = b.firstSeq - 1
}

// partScan is what rebuild read of a partition's last records in one
// leadership term, of one topic (by ID): for each producer with records
// there, the offset of its last one. mu is held while it is read, so
// producers asking at once have it read once. It is read again after
// producerIdle: a producer whose state expired may have stored records
// since the read.
type partScan struct {
	mu      sync.Mutex
	term    uint64
	topicID uint32
	made    time.Time
	// floor is the first offset read.
	floor int64
	// legacyBelow is the offset of the first record read that the
	// listener marked, or, when it read none, the end of the partition
	// when it read it: records without a mark below it are a listener's
	// before marks (legacyRecord).
	legacyBelow int64
	// last is the offset of each producer's last record read, by
	// producer ID; a producer's entry goes once rebuild read its
	// records. Nil until the records were read.
	last map[int64]int64
}

// scanKey names a partition for producers.scans.
type scanKey struct {
	topic string
	part  int32
}

// scanOf returns the locked partScan of a partition in term, of the
// topic whose ID is topicID: a new one when there is none, or when the
// one there is of another term or topic, or older than producerIdle (a
// producer's state expires no sooner after the read: its records
// stored since, through the listener, were not read).
func (p *producers) scanOf(topic string, part int32, term uint64, topicID uint32) *partScan {
	k := scanKey{topic, part}
	p.mu.Lock()
	sc := p.scans[k]
	if sc == nil || sc.term != term || sc.topicID != topicID || time.Since(sc.made) >= producerIdle {
		sc = &partScan{term: term, topicID: topicID, made: time.Now()}
		p.scans[k] = sc
	}
	p.mu.Unlock()
	sc.mu.Lock()
	return sc
}

// expireScans drops what rebuild read of partitions (scans) that is never
// used again: a read made before now-idle, or in another leadership term
// than term (scanOf makes a new one then). Without it, a read stayed in
// memory until its topic was deleted, with an entry for each producer
// found in the partition's last records read.
func (p *producers) expireScans(now time.Time, idle time.Duration, term uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, sc := range p.scans {
		if sc.term != term || now.Sub(sc.made) >= idle {
			delete(p.scans, k)
		}
	}
}

// storedBeyondRead reports whether b, a batch of st's epoch, is stored,
// though rebuild did not read it: every sequence number of b lies behind
// the producer's last one rebuild read, or at it (seqBelow), so b was
// stored (the listener stores a producer's batches in sequence order),
// and its first lies beyond the records read (st.back): further back
// than readBackTo reads, the partition's last rebuildScan records, or
// inFlightBatches times the batch's size below the producer's last
// record when that is further. check then answers
// DUPLICATE_SEQUENCE_NUMBER, which Kafka clients (franz-go, the Java
// producer) take for stored, its offset unknown: refused
// OUT_OF_ORDER_SEQUENCE_NUMBER, franz-go sent every batch in flight again
// under a new epoch, storing them twice. A batch read but holding other
// records (loggedBatch), or one whose last records are not stored, is
// not one; nor is one behind records read down to the partition's first
// (readBack.whole): the partition provably never held it, which happens
// only when the producer's sequence numbers have a gap (a first batch
// taken as it came), and it is refused OUT_OF_ORDER_SEQUENCE_NUMBER, as
// Kafka refuses a batch its producer state does not hold.
func (st *seqState) storedBeyondRead(b *producedBatch) bool {
	r := st.back
	if r == nil || !st.known || b.producerEpoch != st.epoch || b.firstSeq < 0 || r.whole {
		return false
	}
	first, last := seqBelow(st.lastSeq, b.firstSeq), seqBelow(st.lastSeq, b.lastSeq())
	return first < seqAhead && last <= first && first > seqBelow(st.lastSeq, r.lowest)
}

// errCorruptRead refuses a batch hiddenByCorrupt: KAFKA_STORAGE_ERROR
// (errorCode), which clients retry, taking it neither for stored nor for
// not stored.
var errCorruptRead = errors.New("kafka: the producer's records read back include corrupt ones: not known whether the batch is stored")

// hiddenByCorrupt reports whether b, a batch of st's epoch whose first
// sequence number lies behind the producer's last one read, or at it
// (a retry), is not among the records rebuild read (loggedBatch) while
// that read passed by corrupt records (readBack.corrupt): they may be
// b's, so whether b is stored cannot be told. Answered
// DUPLICATE_SEQUENCE_NUMBER (storedBeyondRead), the client took it for
// stored; OUT_OF_ORDER_SEQUENCE_NUMBER, franz-go sent it again under a
// new epoch, storing it twice when it was.
func (st *seqState) hiddenByCorrupt(b *producedBatch) bool {
	r := st.back
	if r == nil || !r.corrupt || !st.known || b.producerEpoch != st.epoch || b.firstSeq < 0 {
		return false
	}
	if seqBelow(st.lastSeq, b.firstSeq) >= seqAhead {
		return false // ahead of the last record read: no retry
	}
	_, found := st.loggedBatch(b)
	return !found
}
