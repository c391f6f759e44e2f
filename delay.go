package equeue

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Delayed messages. A message whose delivery time is in the future is not
// written to its queue but to the engine's delay log (a store queue of its
// own, so large bodies are stored like any record), with an index key
// ordered by delivery time:
//
//	d/ | deliver-at unix nanos (8, BE) | delay-log offset (8, BE)  ->  topic id (4) | queue (4)
//
// The scheduler seeks the index from its start, so finding what is due costs
// only the due entries, however many are pending. Moving a message appends
// it to its queue and deletes its index key in one atomic store write, so a
// delayed message is delivered once, across crashes. The delay-log record
// is trimmed after that write; records left behind by a crash between the
// two are swept on open.

var (
	keyDelayPrefix = []byte("d/")
	delayLogID     = store.QueueID{Topic: 0, Queue: 0} // topic ids start at 1
	errStopScan    = errors.New("stop scan")
)

// DefaultMaxDelay is how far in the future a message may be scheduled.
const DefaultMaxDelay = 7 * 24 * time.Hour

func delayKey(at time.Time, seq int64) []byte {
	k := slices.Clone(keyDelayPrefix)
	k = binary.BigEndian.AppendUint64(k, uint64(at.UnixNano()))
	return binary.BigEndian.AppendUint64(k, uint64(seq))
}

func parseDelayKey(k []byte) (time.Time, int64, bool) {
	if len(k) != len(keyDelayPrefix)+16 {
		return time.Time{}, 0, false
	}
	b := k[len(keyDelayPrefix):]
	return time.Unix(0, int64(binary.BigEndian.Uint64(b))), int64(binary.BigEndian.Uint64(b[8:])), true
}

// scheduler moves due delayed messages into their queues.
type scheduler struct {
	e     *Engine
	log   *queue // the delay log
	kick  chan struct{}
	mu    sync.Mutex
	alarm time.Time // when the scheduler plans to wake; zero when idle
	// inflight holds the moves queued and not yet visible, by delay-log
	// slot (delay_inflight.go); under mu.
	inflight map[int64]inflightMove
	// listings are the scans of the delay index by Engine.Delayed in
	// progress (delay_inflight.go); under mu.
	listings map[*delayListing]struct{}
	// parked holds the delay-log slots of due messages whose move no
	// write of the store can hold (delay_toolarge.go), with their topic's
	// ID: passed over until a reopen, or until their topic is deleted;
	// under mu.
	parked map[int64]uint32
	// parkedCount is len(parked), read without mu (Stats, topicDeleted).
	parkedCount atomic.Int64
	// queueHook, set by tests, runs when a move is registered in flight,
	// before it is queued to the writer.
	queueHook atomic.Pointer[func()]
	// parkHook, set by tests, runs when a move no write can hold is about
	// to be parked (delay_toolarge.go), its topic looked up already.
	parkHook atomic.Pointer[func()]

	moved   uint64
	dropped uint64
}

// openScheduler opens the delay log where its records end, so slots of
// records already moved and trimmed (all of them, in an empty log) are
// taken again after a reopen. No pending message holds one: an index key's
// record stays until the write that deletes the key, and the sweep deletes
// only records no key refers to, so every new slot is above every pending
// one (TestDelay_ReopensBetweenSendsWithMixedDueTimes).
//
// Damage the store cannot see (queueend.go) can take the log's tail with
// the records of pending messages, whose index keys stay: the log then
// opens past the highest slot a key holds, as a queue opens past the
// offsets its metadata proves were given out. A new message sharing a
// lost message's slot would be moved by that message's key, at its time
// and into its queue, and its own key would find nothing; the lost
// message's key is dropped when it comes due, its record gone.
func (e *Engine) openScheduler() error {
	first, next, ok, err := e.st.Bounds(delayLogID)
	if err != nil {
		return fmt.Errorf("equeue: delay log bounds: %w", unsupportedSegment(err))
	}
	live, err := e.delaySlots()
	if err != nil {
		return fmt.Errorf("equeue: read the delay index: %w", err)
	}
	if !ok {
		first, next = 0, 0
	} else if err := e.sweepDelayLog(live, first, next); err != nil {
		return fmt.Errorf("equeue: sweep the delay log: %w", err)
	}
	end := next
	if n := len(live); n > 0 && live[n-1] >= next {
		end = live[n-1] + 1
		lost := len(live) - sort.Search(len(live), func(i int) bool { return live[i] >= next })
		e.log.Error("delay log ends below slots of pending delayed messages: their records are lost, and their slots given out no more",
			"stored_end", next, "end", end, "lost", lost)
	}
	pseudo := &topic{name: "%DELAY%", id: 0}
	q := newQueue(pseudo, 0, int64(first), int64(end))
	qs := []*queue{q}
	pseudo.queues.Store(&qs)
	e.sched = &scheduler{e: e, log: q, kick: make(chan struct{}, 1)}
	return nil
}

// scheduled is called after delayed messages were stored: it wakes the
// scheduler if one is due before its alarm.
func (s *scheduler) scheduled(at time.Time) {
	s.mu.Lock()
	wake := s.alarm.IsZero() || at.Before(s.alarm)
	s.mu.Unlock()
	if wake {
		select {
		case s.kick <- struct{}{}:
		default:
		}
	}
}

func (s *scheduler) run() {
	const idle = time.Minute
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.e.closing:
			return
		case <-t.C:
		case <-s.kick:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
		// While scanning, the alarm is unknown: any message scheduled now
		// kicks, so the scan cannot miss it.
		s.mu.Lock()
		s.alarm = time.Time{}
		s.mu.Unlock()
		next, err := s.moveDue()
		if err != nil && !errors.Is(err, ErrClosed) && !errors.Is(err, ErrStoreFailed) && // a stop is logged once
			!errors.Is(err, errMoveOutOfOrder) { // held back only: logged by move
			s.e.log.Error("moving delayed messages", "err", err)
		}
		wait := idle
		if err != nil {
			wait = time.Second
		} else if !next.IsZero() {
			wait = min(idle, max(time.Until(next), 0))
		}
		s.mu.Lock()
		s.alarm = time.Now().Add(wait)
		s.mu.Unlock()
		t.Reset(wait)
	}
}

type dueEntry struct {
	key   []byte
	seq   int64
	topic uint32
	queue uint32
	// damaged says why the entry is dropped as corrupt (its index key or
	// value is garbled or unreadable); nil for a sound entry.
	damaged error
}

// errBadDelayIndex is why an index entry of the wrong form is dropped.
var errBadDelayIndex = errors.New("malformed delay index entry")

// moveDue moves every due message and returns the next delivery time
// (zero when nothing is pending).
func (s *scheduler) moveDue() (time.Time, error) {
	const chunk = 512
	for {
		now := time.Now()
		var (
			due  []dueEntry
			next time.Time
		)
		err := s.e.scanMetaDamaged(keyDelayPrefix, func(k, v []byte, damaged error) error {
			at, seq, ok := parseDelayKey(k)
			if damaged == nil && (!ok || len(v) != delayIndexValueLen) {
				damaged = errBadDelayIndex
			}
			if damaged != nil {
				// Its record, if any, is left to the sweep on open: the
				// slot of a garbled key is not known for sure.
				due = append(due, dueEntry{key: k, seq: -1, damaged: damaged})
			} else if at.After(now) {
				next = at
				return errStopScan
			} else if s.isParked(seq, binary.BigEndian.Uint32(v)) {
				return nil // too large to move: pending until a reopen
			} else {
				due = append(due, dueEntry{key: k, seq: seq, topic: binary.BigEndian.Uint32(v), queue: binary.BigEndian.Uint32(v[4:])})
			}
			if len(due) >= chunk {
				return errStopScan
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStopScan) {
			return time.Time{}, err
		}
		if len(due) == 0 {
			return next, nil
		}
		if err := s.move(due); errors.Is(err, errMoveTopicDeleted) {
			continue // a pass at once drops them with their topic
		} else if err != nil {
			return time.Time{}, err
		}
		if len(due) < chunk && !next.IsZero() {
			return next, nil
		}
	}
}

// move appends due messages to their queues, each as one command that also
// deletes its index key, and then trims the delay log of the slots whose
// move was stored. A slot whose outcome is unknown is left for the sweep on
// open (its index key may be gone).
func (s *scheduler) move(due []dueEntry) error {
	ctx := s.e.bgCtx
	mo, start := s.e.moveObserver(), time.Now()
	var (
		cmds []*command
		ents []dueEntry // the entries of cmds
		errs moveErrs
		last = map[*queue]*command{} // the latest move queued to each queue
	)
	for _, d := range due {
		del := []store.MetaOp{{Key: d.key, Delete: true}}
		var c *command
		if d.seq >= 0 {
			recs, err := s.e.st.Read(delayLogID, uint64(d.seq), uint64(d.seq)+1, 1, 0)
			if err != nil && !errors.Is(err, store.ErrDamaged) {
				// Stop queueing, but still wait for (and trim) the
				// moves already queued: returning now would leave them
				// untrimmed, and the next scan could queue them again.
				errs.add(err)
				break
			}
			if err != nil {
				// The store holds the record but can never read it
				// back: it is dropped as corrupt, or every message due
				// after it would wait behind it for ever.
				d.damaged = err
			}
			if t := s.e.topicByID(d.topic); t != nil && len(recs) == 1 && d.damaged == nil {
				if q, err := t.queue(int(d.queue)); err == nil {
					c = s.moveCommand(q, recs[0].Value, del)
				}
			}
		}
		if c == nil {
			// Damaged, topic deleted, queue gone or record missing: drop
			// the entry.
			if d.damaged == nil {
				s.e.log.Warn("delayed message dropped: its topic or record is gone", "topic_id", d.topic, "queue", d.queue, "seq", d.seq)
			}
			c = s.e.metaCommand(del, true)
		}
		if err := s.e.fits(c); err != nil {
			if c.kind == cmdMove {
				// Not queued, so no later move to its queue waits
				// for it (delay_toolarge.go).
				if h := s.parkHook.Load(); h != nil {
					(*h)()
				}
				s.park(d, c, err)
			} else {
				errs.add(err)
			}
			continue
		}
		c.doneCh = make(chan struct{})
		if c.kind == cmdMove {
			// Stored only after the move before it to its queue
			// (delay_order.go).
			c.after, last[c.q] = last[c.q], c
			// Registered until its message is visible: the writer
			// settles it as it completes the move, after publishing it.
			s.register(d)
			if h := s.queueHook.Load(); h != nil {
				(*h)()
			}
			seq, doneCh := d.seq, c.doneCh
			c.done = func(c *command) {
				s.settle(seq, c.err)
				close(doneCh)
			}
		}
		if err := s.e.enqueue(ctx, c); err != nil {
			if c.kind == cmdMove {
				s.settle(d.seq, err)
			}
			errs.add(err)
			break
		}
		cmds = append(cmds, c)
		ents = append(ents, d)
	}
	// Wait for every queued move, even when Close started (the writer runs
	// until the scheduler returned): a scan while a move is still queued
	// would queue it again.
	var moved []int64
	for i, c := range cmds {
		completed, err := s.e.wait(context.Background(), c)
		if !completed {
			errs.add(err)
			break
		}
		if err != nil {
			if c.kind == cmdMove && errors.Is(err, ErrTopicNotFound) && c.q.topic.deleted.Load() {
				// Its topic was deleted while it was under way:
				// the next pass drops it with its topic.
				errs.topicGone()
			} else {
				errs.add(err)
			}
			continue
		}
		if c.kind == cmdMove {
			s.moved++
			if mo != nil {
				s.e.observeDue(mo, c, start)
			}
		} else {
			s.dropped++
		}
		if ents[i].damaged != nil {
			s.noteCorrupt(ents[i])
		}
		if ents[i].seq >= 0 {
			moved = append(moved, ents[i].seq)
		}
	}
	s.trim(moved)
	if errs.heldBack > 0 {
		// The failure that held them back is told with the others.
		s.e.log.Debug("delayed messages held back behind a move not stored; they come due again in order",
			"held_back", errs.heldBack)
	}
	return errs.err()
}

// moveCommand is the move of rec, a delay-log record, into q, deleting
// its index key (del). A record that fails its check is moved as it was
// read: sealed again, its damage would get a valid checksum and be
// delivered; as read, pulls of q skip it and report it corrupt. So is one
// of a newer format version, which is not damage: pulls stop before it.
func (s *scheduler) moveCommand(q *queue, rec []byte, del []store.MetaOp) *command {
	c := &command{kind: cmdMove, q: q, recs: [][]byte{rec}, meta: del,
		sync: s.e.opts.Sync.kind == syncAlways, internal: true}
	switch _, _, err := scanRecord(rec); {
	case errors.Is(err, ErrUnsupportedFormat):
		c.asRead = true
	case err != nil:
		s.e.log.Warn("damaged delayed message moved as read; pulls report it corrupt", "topic", q.topic.name, "queue", q.id, "err", err)
		c.asRead = true
	}
	c.seal(s.e.limits)
	return c
}

// trim deletes delay-log slots, in runs of consecutive slots.
func (s *scheduler) trim(slots []int64) {
	slices.Sort(slots)
	for i := 0; i < len(slots); {
		j := i + 1
		for j < len(slots) && slots[j] == slots[j-1]+1 {
			j++
		}
		if err := s.e.st.DeleteRange(delayLogID, uint64(slots[i]), uint64(slots[j-1])+1); err != nil {
			s.e.log.Warn("trimming the delay log", "err", err)
		}
		i = j
	}
}

// delaySlots returns the delay-log slots the index keys refer to, in
// ascending order.
func (e *Engine) delaySlots() ([]uint64, error) {
	var live []uint64
	// A key whose value cannot be read back still holds its slot: the
	// scheduler drops it as corrupt when it comes due.
	err := e.scanMetaDamaged(keyDelayPrefix, func(k, _ []byte, _ error) error {
		if _, seq, ok := parseDelayKey(k); ok && seq >= 0 {
			live = append(live, uint64(seq))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(live)
	return live, nil
}

// sweepDelayLog deletes the delay-log records in [first, next) that no
// index key refers to (live, ascending, as delaySlots returns them): the
// move of a record deletes its key and the trim of its slot follows, so a
// crash or failure between the two leaves such a record behind.
func (e *Engine) sweepDelayLog(live []uint64, first, next uint64) error {
	from := first
	for _, seq := range append(live, next) {
		if seq > from && from < next {
			if err := e.st.DeleteRange(delayLogID, from, min(seq, next)); err != nil {
				return err
			}
		}
		from = max(from, seq+1)
	}
	return nil
}

func delayIndexValue(target *queue) []byte {
	v := make([]byte, 0, delayIndexValueLen)
	v = binary.BigEndian.AppendUint32(v, target.topic.id)
	return binary.BigEndian.AppendUint32(v, uint32(target.id))
}

func (e *Engine) topicByID(id uint32) *topic {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.topicIDs[id]
}
