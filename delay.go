package equeue

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
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
// delayed message is delivered once, across crashes.

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

	moved   uint64
	dropped uint64
}

func (e *Engine) openScheduler() error {
	first, next, ok, err := e.st.Bounds(delayLogID)
	if err != nil {
		return fmt.Errorf("equeue: delay log bounds: %w", err)
	}
	if !ok {
		first, next = 0, 0
	}
	pseudo := &topic{name: "%DELAY%", id: 0}
	q := newQueue(pseudo, 0, int64(first), int64(next))
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
		if err != nil && !errors.Is(err, ErrClosed) {
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
}

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
		err := s.e.st.ScanMeta(keyDelayPrefix, func(k, v []byte) error {
			at, seq, ok := parseDelayKey(k)
			if !ok || len(v) != 8 {
				s.e.log.Error("bad delay index entry dropped", "key", k)
				due = append(due, dueEntry{key: k, seq: -1})
			} else if at.After(now) {
				next = at
				return errStopScan
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
		if err := s.move(due); err != nil {
			return time.Time{}, err
		}
		if len(due) < chunk && !next.IsZero() {
			return next, nil
		}
	}
}

// move appends due messages to their queues, each together with the
// deletion of its index key, and then trims the delay log.
func (s *scheduler) move(due []dueEntry) error {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		moved   []int64
		pending []*appendReq
	)
	for _, d := range due {
		del := []store.MetaOp{{Key: d.key, Delete: true}}
		var q *queue
		var rec []byte
		if d.seq >= 0 {
			recs, err := s.e.st.Read(delayLogID, uint64(d.seq), uint64(d.seq)+1, 1, 0)
			if err != nil {
				return err
			}
			if t := s.e.topicByID(d.topic); t != nil && len(recs) == 1 {
				if qq, err := t.queue(int(d.queue)); err == nil {
					q, rec = qq, recs[0].Value
				}
			}
		}
		if q == nil {
			// Topic deleted, queue gone or record missing: drop the entry.
			s.e.log.Warn("delayed message dropped: its topic or record is gone", "topic_id", d.topic, "queue", d.queue, "seq", d.seq)
			s.dropped++
			if err := s.e.st.Write(&store.Batch{Meta: del}); err != nil {
				return err
			}
			if d.seq >= 0 {
				moved = append(moved, d.seq)
			}
			continue
		}
		wg.Add(1)
		seq := d.seq
		pending = append(pending, &appendReq{q: q, recs: [][]byte{rec}, bytes: s.e.limits.ValueCost(len(rec)), meta: del,
			sync: s.e.opts.Sync.kind == syncAlways,
			done: func(r *appendReq) {
				mu.Lock()
				if r.err != nil {
					errs = append(errs, r.err)
				} else {
					moved = append(moved, seq)
				}
				mu.Unlock()
				wg.Done()
			}})
	}
	for i, r := range pending {
		select {
		case s.e.writeCh <- r:
			s.e.enqueued()
		case <-s.e.closing:
			// The writer drains until Close; requests not handed over stay pending.
			for range pending[i:] {
				wg.Done()
			}
			wg.Wait()
			return ErrClosed
		}
	}
	wg.Wait()
	s.moved += uint64(len(moved))
	slices.Sort(moved)
	for i := 0; i < len(moved); {
		j := i + 1
		for j < len(moved) && moved[j] == moved[j-1]+1 {
			j++
		}
		if err := s.e.st.DeleteRange(delayLogID, uint64(moved[i]), uint64(moved[j-1])+1); err != nil {
			s.e.log.Warn("trimming the delay log", "err", err)
		}
		i = j
	}
	return errors.Join(errs...)
}

// delayRequest turns r into a write to the delay log, with one index key per
// message, each due at its own time.
func (e *Engine) delayRequest(r *appendReq, target *queue, dues []time.Time) {
	r.q = e.sched.log
	r.delayed = true
	r.firstDue = slices.MinFunc(dues, func(a, b time.Time) int { return a.Compare(b) })
	val := binary.BigEndian.AppendUint32(nil, target.topic.id)
	val = binary.BigEndian.AppendUint32(val, uint32(target.id))
	r.metaFor = func(first int64) []store.MetaOp {
		ops := make([]store.MetaOp, len(dues))
		for i, at := range dues {
			ops[i] = store.MetaOp{Key: delayKey(at, first+int64(i)), Value: val}
		}
		return ops
	}
	r.bytes += len(dues) * (len(keyDelayPrefix) + 16 + len(val))
}

func (e *Engine) topicByID(id uint32) *topic {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, t := range e.topics {
		if t.id == id {
			return t
		}
	}
	return nil
}
