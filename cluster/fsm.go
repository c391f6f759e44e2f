package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/equeue-go/equeue/store"
)

// The FSM applies committed Raft entries to the node's Badger store, in log
// order, on every node. Applying is deterministic: an entry's effect depends
// only on the store and the entry (the leader's engine already decided
// offsets and stamped times into the records), so every node holds the same
// queues at the same offsets.
//
// The index of the last applied entry and the current tenure are stored in
// the same Badger write as each applied batch (stateKey), so a node that
// restarts skips what it already applied and never applies an entry twice.
// Badger writes unsynced: the fsynced Raft log is the source of truth, and
// Badger is synced before Raft may compact the log (Snapshot).

// stateKey is the metadata key of the FSM's state. The engine's metadata
// keys are printable names; this one starts with a byte none of them use.
var stateKey = []byte("\x00cluster/state")

// errStaleTenure is what the FSM answers to a write entry of a tenure that
// is not the current one: the entry was ignored, nothing of it is stored.
var errStaleTenure = errors.New("cluster: write of a superseded leader tenure ignored")

// errEntryRefused is the answer to a batch entry no node's store can take
// (a metadata key too long): refused on every node alike, not stored.
var errEntryRefused = errors.New("cluster: entry refused by every node")

// errStoreLimits breaks the FSM of a node whose store takes smaller writes
// than the leader's, which proposes writes up to its own store's limits:
// the node would stop at the first write it cannot take, perhaps long
// after, and at the same entry again after a restart. It stops instead
// when the tenure starts (entryLimits), or when it opens on a store whose
// tenure says so, and follows again once reopened with Badger options
// that give limits at least the leader's.
var errStoreLimits = errors.New("cluster: this node's store takes smaller writes than the leader's; reopen it with Options.Badger (MemTableSize, ValueLogFileSize, ValueThreshold) giving limits at least the leader's")

// fsmState is what stateKey holds.
type fsmState struct {
	applied    uint64
	tenure     uint64
	leaderID   string
	clientAddr string
	kafkaAddr  string // the leader's Kafka address; "" when it has none
	// limits are the store limits of the leader of tenure (entryLimits);
	// zero until its limits entry is applied.
	limits store.Limits
	// clusterID is the ID of the cluster this node's store belongs to
	// (clusterid.go); "" until it applies an entry that carries one.
	clusterID string
}

// encode writes the Kafka address only when there is one, or limits
// follow, and the limits only when set, or the cluster ID follows: the
// state of a cluster without Kafka listeners keeps the encoding it always
// had, and versions before the limits or the cluster ID ignore them.
func (s fsmState) encode() []byte {
	b := binary.BigEndian.AppendUint64(nil, s.applied)
	b = binary.BigEndian.AppendUint64(b, s.tenure)
	b = appendBytes(b, []byte(s.leaderID))
	b = appendBytes(b, []byte(s.clientAddr))
	withLimits := s.limits != (store.Limits{}) || s.clusterID != ""
	if s.kafkaAddr != "" || withLimits {
		b = appendBytes(b, []byte(s.kafkaAddr))
	}
	if withLimits {
		b = appendLimits(b, s.limits)
	}
	if s.clusterID != "" {
		b = appendBytes(b, []byte(s.clusterID))
	}
	return b
}

func decodeState(v []byte) (fsmState, error) {
	if len(v) < 16 {
		return fsmState{}, fmt.Errorf("%w: cluster state of %d bytes", errBadEntry, len(v))
	}
	s := fsmState{applied: binary.BigEndian.Uint64(v), tenure: binary.BigEndian.Uint64(v[8:])}
	d := &decoder{b: v[16:]}
	s.leaderID = string(d.bytes("leader id"))
	s.clientAddr = string(d.bytes("client address"))
	if d.err == nil && len(d.b) > 0 {
		s.kafkaAddr = string(d.bytes("kafka address"))
	}
	if d.err == nil && len(d.b) > 0 {
		s.limits = d.limits()
	}
	if d.err == nil && len(d.b) > 0 {
		s.clusterID = string(d.bytes("cluster id"))
	}
	return s, d.err
}

// takes reports whether a store of limits own takes every write a store
// of limits l takes: no limit below l's (zero means none), and no value
// weighing more against MaxBytes (see store.Limits.ValueCost).
func takes(own, l store.Limits) bool {
	atLeast := func(a, b int) bool { return a == 0 || (b != 0 && a >= b) }
	lighter := l.ValueThreshold == 0 || (own.ValueThreshold > 0 && own.ValueThreshold <= l.ValueThreshold)
	return atLeast(own.MaxEntries, l.MaxEntries) && atLeast(own.MaxBytes, l.MaxBytes) &&
		atLeast(own.MaxValueSize, l.MaxValueSize) && lighter
}

// checkLimits returns an error matching errStoreLimits when this node's
// store does not take every write of a leader whose store has limits l.
func (f *fsm) checkLimits(l store.Limits) error {
	if own := f.st.Limits(); l != (store.Limits{}) && !takes(own, l) {
		return fmt.Errorf("%w (this node's: %+v; the leader's: %+v)", errStoreLimits, own, l)
	}
	return nil
}

// stateRoom is what the state op adds to a batch: one operation and at
// most this many bytes (key, fixed fields, an ID and two addresses up to
// 255 bytes each, a cluster ID).
const stateRoom = 64 + 3*(255+2) + 2 + maxClusterIDBytes

type fsm struct {
	st  *store.Badger
	log *slog.Logger
	// onTenure is called (on the FSM goroutine) after a tenure entry applied.
	onTenure func(fsmState)
	// awaitLog, when set, waits until this node's own Raft log holds an
	// index durably (leaderlog.go): an entry is applied, and its sender
	// answered, only then.
	awaitLog func(index uint64) error

	// getLog reads an entry of this node's Raft log: the FSM replays the
	// entries it was handed while its store refused them for a full disk
	// (catchUp).
	getLog func(index uint64, l *raft.Log) error
	// writeHook, when set, is asked before each store write of an
	// entry's records (tests: a store refusing writes).
	writeHook func(*store.Batch) error
	// persistHook, when set, runs as a snapshot's Persist begins (tests:
	// a store that does not answer Raft's snapshot goroutine).
	persistHook func()

	restores atomic.Uint64 // snapshots installed
	offsets  *offsets      // each queue's next offset (under applyMu)
	group    *writeGroup   // the entries being applied (under applyMu)

	// applyMu serializes what Raft's FSM goroutine calls (ApplyBatch,
	// Snapshot, Restore) with retry, which a timer calls.
	applyMu sync.Mutex
	handed  uint64 // the last entry Raft handed over (under applyMu)
	// settled is the last entry applied or ignored before any store
	// failure (under applyMu): catchUp starts after it. The applied index
	// stored does not move for ignored entries (of a superseded tenure,
	// undecodable, configuration), and after a run of them longer than
	// the log keeps behind a snapshot the log no longer holds them.
	settled uint64

	mu     sync.Mutex // guards state and broken for readers off the FSM goroutine
	state  fsmState
	broken error // a store failure: this node's copy can no longer follow the log
}

var _ raft.BatchingFSM = (*fsm)(nil)

func newFSM(st *store.Badger, log *slog.Logger) (*fsm, error) {
	f := &fsm{st: st, log: log, offsets: newOffsets(st)}
	if err := f.load(); err != nil {
		return nil, err
	}
	return f, nil
}

// errRestoreCutShort breaks an FSM whose store holds part of a snapshot:
// an install failed, or the node stopped during one. Its state key may be
// among the keys loaded, and says nothing of the rest, so the node follows
// no entry until a whole snapshot is installed: Raft installs the latest
// one it keeps when the node starts, or the leader sends one.
var errRestoreCutShort = errors.New("cluster: the store holds part of a snapshot whose install was cut short; this node follows no entry until one is installed whole")

func (f *fsm) load() error {
	note, cut, err := f.st.RestoreNote()
	if err != nil {
		return fmt.Errorf("cluster: read state: %w", err)
	}
	if cut {
		// The cluster ID of the snapshot cut short (Restore noted it), so
		// a snapshot or entries of another cluster are still refused.
		f.setState(fsmState{clusterID: string(note)})
		_ = f.fail(errRestoreCutShort)
		return nil
	}
	v, err := f.st.GetMeta(stateKey)
	switch {
	case errors.Is(err, store.ErrNotFound):
		f.setState(fsmState{})
		return nil
	case err != nil:
		return fmt.Errorf("cluster: read state: %w", err)
	}
	s, err := decodeState(v)
	if err != nil {
		return err
	}
	f.setState(s)
	if err := f.checkLimits(s.limits); err != nil {
		_ = f.fail(err)
	}
	return nil
}

func (f *fsm) setState(s fsmState) {
	f.mu.Lock()
	f.state = s
	f.mu.Unlock()
}

// current returns the state as of the last applied entry.
func (f *fsm) current() fsmState {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// clusterID returns the cluster ID of the state as of the last applied
// entry ("" while it has none).
func (f *fsm) clusterID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state.clusterID
}

func (f *fsm) err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.broken
}

// Apply applies one committed entry. What it returns is the answer the
// leader's ApplyFuture gives: nil or an error saying the entry was ignored
// or failed. Raft calls ApplyBatch; Apply is the same for one entry.
func (f *fsm) Apply(l *raft.Log) any {
	return f.ApplyBatch([]*raft.Log{l})[0]
}

// ApplyBatch applies committed entries, in log order, and returns each
// one's answer (see Apply). Consecutive write entries are stored together:
// one Badger write holds their records and metadata and the state with the
// last one's index, so a restart never applies a part of them. Each is
// still checked as if applied alone, in order (its tenure, and its offsets
// against the queues as the entries before it leave them), so every node
// gives every entry the same answer however Raft groups the entries it
// hands over; only a store failure answers the whole group with the error.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if len(logs) > 0 {
		f.catchUp(logs[0].Index - 1)
		if f.err() == nil {
			// Not broken: every entry before these was applied or ignored
			// (or is in the snapshot Raft restored).
			f.settled = max(f.settled, logs[0].Index-1)
		}
		defer func() {
			f.handed = logs[len(logs)-1].Index
			if f.err() == nil {
				f.settled = f.handed
			}
		}()
	}
	out := make([]any, len(logs))
	if f.awaitLog != nil && len(logs) > 0 {
		if err := f.awaitLog(logs[len(logs)-1].Index); err != nil {
			err = f.fail(fmt.Errorf("cluster: raft log entries %d-%d not stored: %w", logs[0].Index, logs[len(logs)-1].Index, err))
			for i := range out {
				out[i] = err
			}
			return out
		}
	}
	if f.group == nil {
		f.group = newWriteGroup(f.st.Limits())
	}
	g := f.group
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			out[i] = f.applyEntry(g, i, l, out)
		}
	}
	f.flush(g, out)
	g.release()
	return out
}

// applyEntry applies l, at position i of the batch, or adds it to g; it
// returns l's answer (nil for an entry held in g: flush answers it).
func (f *fsm) applyEntry(g *writeGroup, i int, l *raft.Log, out []any) any {
	if err := f.err(); err != nil {
		return err
	}
	s := f.current()
	if !g.empty() {
		s = g.state
	}
	if l.Index <= s.applied {
		return nil // applied before a restart
	}
	id := entryClusterID(l)
	if id != "" && s.clusterID != "" && id != s.clusterID {
		// The relay refuses such entries (clusterid.go): this node's store
		// belongs to another cluster, and takes nothing of this one.
		if err := f.flush(g, out); err != nil {
			return err
		}
		return f.fail(fmt.Errorf("cluster: apply entry %d: %w", l.Index, foreignError(s.clusterID, id)))
	}
	e, err := decodeEntryInto(l.Data, &g.decoded)
	if err != nil {
		// Every node decodes the same bytes the same way: skip it everywhere.
		f.log.Error("raft entry skipped", "index", l.Index, "err", err)
		return err
	}
	next := s
	next.applied = l.Index
	if s.clusterID == "" && id != "" {
		next.clusterID = id // a new node takes its cluster's ID
	}
	if e.kind == entryBatch {
		if e.tenure != s.tenure {
			return errStaleTenure
		}
		b := e.batch
		if !store.KeysFitBadger(b) {
			// Badger refuses it on every node, of every version (a leader
			// refuses longer keys than store.MaxKeyBytes before proposing;
			// an older leader did not): refused alike everywhere, after
			// the entries before it, instead of breaking every node.
			if err := f.flush(g, out); err != nil {
				return err
			}
			return f.refuse(l.Index, s, fmt.Errorf("%w: %w: a metadata key is longer than %d bytes", errEntryRefused, store.ErrBatchTooLarge, store.BadgerMaxKeyBytes))
		}
		if !g.empty() && !g.fits(b) {
			if err := f.flush(g, out); err != nil {
				return err
			}
		}
		after, cerr := f.offsets.check(b, g.next)
		if cerr != nil {
			// The entries before it are stored first, as if applied alone.
			if err := f.flush(g, out); err != nil {
				return err
			}
			if errors.Is(cerr, errOffsetMismatch) {
				return f.refuse(l.Index, s, cerr)
			}
			return f.fail(fmt.Errorf("cluster: apply entry %d: %w", l.Index, cerr))
		}
		g.add(b, after, l.Index, i, next)
		if writesWatermark(b) {
			// A watermark changes a queue's next offset as the store gives it:
			// the entries after it are checked against the store holding it.
			if err := f.flush(g, out); err != nil {
				return err
			}
		}
		return nil
	}
	// Every other entry is applied alone, after the group before it.
	if err := f.flush(g, out); err != nil {
		return err
	}
	switch e.kind {
	case entryTenure:
		next.tenure, next.leaderID, next.clientAddr, next.kafkaAddr = e.tenure, e.nodeID, e.clientAddr, e.kafkaAddr
		next.limits = store.Limits{} // its own limits entry follows
		err = f.st.Write(&store.Batch{Meta: []store.MetaOp{{Key: stateKey, Value: next.encode()}}})
	case entryLimits:
		if e.tenure != s.tenure {
			return errStaleTenure
		}
		// Not applied (a restart reads it again) when this store cannot
		// follow the tenure: reopened with larger limits, it can.
		if err := f.checkLimits(e.limits); err != nil {
			return f.fail(fmt.Errorf("cluster: apply entry %d: %w", l.Index, err))
		}
		next.limits = e.limits
		err = f.st.Write(&store.Batch{Meta: []store.MetaOp{{Key: stateKey, Value: next.encode()}}})
	case entryDelete, entryDrop:
		if e.tenure != s.tenure {
			return errStaleTenure
		}
		// Deleting is idempotent, so a crash between it and the state
		// write only repeats it.
		if e.kind == entryDelete {
			err = f.st.DeleteRange(e.queue, e.from, e.to)
		} else {
			err = f.st.DropQueue(e.queue)
		}
		f.offsets.forget(e.queue)
		if err == nil {
			err = f.st.Write(&store.Batch{Meta: []store.MetaOp{{Key: stateKey, Value: next.encode()}}})
		}
	}
	if err != nil {
		return f.fail(fmt.Errorf("cluster: apply entry %d: %w", l.Index, err))
	}
	f.setState(next)
	if e.kind == entryTenure && f.onTenure != nil {
		f.onTenure(next)
	}
	return nil
}

// flush stores the entries held in g in one write with the state after
// the last of them, answers them in out, and empties g. It returns the
// error the node broke with when the write failed.
func (f *fsm) flush(g *writeGroup, out []any) error {
	if g.empty() {
		return nil
	}
	b := g.batch()
	var err error
	if f.writeHook != nil {
		err = f.writeHook(b)
	}
	if err == nil {
		err = f.st.Write(b)
	}
	if err != nil {
		err = f.fail(fmt.Errorf("cluster: apply entries %d-%d: %w", g.first, g.state.applied, err))
	} else {
		f.offsets.advance(b, g.next)
		f.setState(g.state)
	}
	for _, i := range g.held {
		if err != nil {
			out[i] = err
		} else {
			out[i] = nil
		}
	}
	g.reset()
	return err
}

// fail records a store failure: this node's copy can no longer follow the
// log (until a snapshot is installed, or, for a full disk, until its store
// takes writes again: catchUp). It returns err.
func (f *fsm) fail(err error) error {
	f.log.Error("apply failed; this node stops following the log", "err", err)
	f.mu.Lock()
	f.broken = err
	f.mu.Unlock()
	return err
}

// retry catches up (catchUp) to the last entry Raft handed over, when the
// store refused entries for a full disk: the node's timer calls it, so a
// node follows again while the cluster commits nothing new.
func (f *fsm) retry() {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	f.catchUp(f.handed)
}

// catchUpChunk bounds the entries catchUp reads from the log at a time.
const catchUpChunk = 256

// catchUp replays this node's Raft log from the entry after the last one
// applied or ignored before the failure (settled) up to index upto, when the store refused an entry for
// a full disk (store.ErrNoSpace): such a write stored nothing, so the
// store and the FSM's memory stand where they were before it, and the
// entries handed over since (answered with that error) can be applied
// now, in order, from the log, which keeps them (a broken FSM takes no
// snapshot, so Raft compacts none of them away). It runs on the FSM's
// goroutine, before each batch Raft hands over, and from the node's timer
// (retry): once space is freed, the node follows the log again at the next
// entry the cluster commits or within fullDiskRetry. Any other store
// failure, and a refusal again, leave the FSM broken.
func (f *fsm) catchUp(upto uint64) {
	err := f.err()
	if err == nil || !errors.Is(err, store.ErrNoSpace) || f.getLog == nil {
		return
	}
	from := max(f.current().applied, f.settled) + 1
	first := from
	f.mu.Lock()
	f.broken = nil
	f.mu.Unlock()
	for from <= upto {
		n := min(upto-from+1, catchUpChunk)
		logs := make([]*raft.Log, 0, n)
		for i := from; i < from+n; i++ {
			l := new(raft.Log)
			if gerr := f.getLog(i, l); gerr != nil {
				// Not in the log any more: only a snapshot can help now
				// (the error no longer says "full disk", so this is not
				// tried again).
				_ = f.fail(fmt.Errorf("cluster: catching up after a full disk (%v): read raft log entry %d: %w", err, i, gerr))
				return
			}
			logs = append(logs, l)
		}
		if f.group == nil {
			f.group = newWriteGroup(f.st.Limits())
		}
		g := f.group
		out := make([]any, len(logs))
		for i, l := range logs {
			if l.Type == raft.LogCommand {
				out[i] = f.applyEntry(g, i, l, out)
			}
		}
		f.flush(g, out)
		g.release()
		if f.err() != nil {
			return // refused again: broken as before, retried with the next batch
		}
		from += n
		f.settled = from - 1
	}
	if from > first {
		f.log.Info("store takes writes again: entries it had refused replayed from the raft log", "entries", from-first, "applied", f.current().applied)
	}
}

// Snapshot syncs Badger, so that everything applied so far survives the
// log compaction that follows, and pins the store's state in one read
// transaction; Persist streams it while Apply goes on.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	if err := f.err(); err != nil {
		return nil, err
	}
	if err := f.st.Sync(); err != nil {
		return nil, fmt.Errorf("cluster: snapshot: sync: %w", err)
	}
	sn, err := f.st.Snapshot()
	if err != nil {
		return nil, fmt.Errorf("cluster: snapshot: %w", err)
	}
	s := f.current()
	return &fsmSnapshot{sn: sn, applied: s.applied, clusterID: s.clusterID, log: f.log, hook: f.persistHook}, nil
}

// Restore replaces the store with a snapshot. Raft also restores the
// latest snapshot when a node starts: when the store already holds that
// point (or later), it is kept as it is. A snapshot of another cluster
// (the relay refuses its install: clusterid.go) is refused, the store
// kept as it is.
func (f *fsm) Restore(rc io.ReadCloser) error {
	f.applyMu.Lock()
	defer f.applyMu.Unlock()
	defer rc.Close()
	h, err := readSnapHeader(rc)
	if err != nil {
		return fmt.Errorf("cluster: restore: header: %w", err)
	}
	if own := f.current().clusterID; own != "" && h.clusterID != "" && own != h.clusterID {
		err := fmt.Errorf("cluster: restore: %w", foreignError(own, h.clusterID))
		f.log.Error("snapshot of another cluster refused", "err", err)
		return err
	}
	if f.err() == nil && f.current().applied >= h.applied {
		return nil
	}
	id := h.clusterID
	if id == "" {
		id = f.current().clusterID
	}
	f.offsets.reset()
	if err := f.st.RestoreNoted(rc, []byte(id)); err != nil {
		if errors.Is(err, store.ErrRestoreRefused) {
			// Nothing of the store changed: the FSM follows the log as
			// before (or stays broken as before).
			return fmt.Errorf("cluster: restore: %w", err)
		}
		// The store may hold part of the snapshot now: only a snapshot
		// installed whole brings this node back (the error does not match
		// store.ErrNoSpace, so retry replays nothing onto it).
		return f.restoreFailed(id, fmt.Errorf("cluster: restore: %v", err))
	}
	f.restores.Add(1)
	f.mu.Lock()
	f.broken = nil
	f.mu.Unlock()
	if err := f.load(); err != nil {
		// The store is the snapshot's, and the state before says nothing
		// of it: only a snapshot installed whole brings this node back.
		return f.restoreFailed(id, fmt.Errorf("cluster: restore: %w", err))
	}
	if f.onTenure != nil {
		f.onTenure(f.current())
	}
	return nil
}

// restoreFailed breaks the FSM with err once a restore changed its store
// and left it holding no state the FSM can follow the log from: of the
// state it held, it keeps only the cluster ID id (the snapshot's, or its
// own when the snapshot carries none), so a snapshot or entries of another
// cluster are still refused. It returns err.
func (f *fsm) restoreFailed(id string, err error) error {
	f.setState(fsmState{clusterID: id})
	return f.fail(err)
}

type fsmSnapshot struct {
	sn        *store.BadgerSnapshot
	applied   uint64
	clusterID string
	log       *slog.Logger
	hook      func() // fsm.persistHook
}

// Persist writes the header (the applied index and the cluster ID:
// appendSnapHeader), then the store's snapshot. Raft calls it on its own
// goroutine, and may restore another snapshot meanwhile: the store's
// snapshot then fails (store.ErrSnapshotRestoredOver) and the sink is
// cancelled, so Raft keeps no copy of what the restore left. A segment the
// store cannot read back is carried as damaged (store.BadgerSnapshot.WriteTo):
// a node that installs the snapshot reports its records corrupt, as this
// one does, where failing would keep this node from ever taking a snapshot
// again, so from compacting its log.
func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if s.hook != nil {
		s.hook()
	}
	err := func() error {
		if _, err := sink.Write(appendSnapHeader(nil, snapHeader{applied: s.applied, clusterID: s.clusterID})); err != nil {
			return err
		}
		_, err := s.sn.WriteTo(sink)
		return err
	}()
	if err != nil {
		_ = sink.Cancel()
		return fmt.Errorf("cluster: persist snapshot: %w", err)
	}
	if d := s.sn.Damaged(); d > 0 {
		s.log.Warn("snapshot carries damaged segments of the store: their records read as corrupt here and on a node that installs it", "segments", d, "applied", s.applied)
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() { s.sn.Release() }
