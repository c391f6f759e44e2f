package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// replicatedStore is the equeue.Store the leader's engine runs on. It is
// the seam between the engine and Raft: every write the engine makes — the
// writer's sealed batch of commands, retention trims, dropped queues —
// becomes one Raft entry of the engine's tenure, and returns once a
// majority has it in its log and the local FSM applied it. Reads go to the
// local Badger store, which the FSM keeps.
//
// It serves one tenure. The first write that fails fences it for good:
// the engine's memory may no longer match the store (an indeterminate
// write may yet be committed), so every later write is refused and the
// node opens a new engine under a new tenure.
type replicatedStore struct {
	raft   *raft.Raft
	local  *store.Badger
	tenure uint64
	term   uint64 // the Raft term the tenure started in
	// clusterID is carried by every entry of the tenure (clusterid.go).
	clusterID string
	timeout   time.Duration
	limits    store.Limits
	onFence   func()
	// admitHook, when set, is asked after the local store admitted a
	// write (tests).
	admitHook func(*store.Batch) error

	mu     sync.Mutex
	fenced error
	// fencedC, once asked for (fencedCh), is closed when the tenure is
	// fenced.
	fencedC chan struct{}

	// down is closed once the waits for entries still on their way are
	// given up (giveUp): Raft was shut down under the tenure (failStop),
	// or the node closes while its leader can commit nothing. A wait for
	// an entry Raft never answers ends there, with downErr.
	down     chan struct{}
	downErr  error
	downOnce sync.Once
	// gone, when not nil, ends the waits on entries Raft was shut down
	// without answering (raftGone).
	gone *raftGone
}

var (
	_ equeue.Store         = (*replicatedStore)(nil)
	_ equeue.AsyncWriter   = (*replicatedStore)(nil)
	_ equeue.WriteAdmitter = (*replicatedStore)(nil)
)

func newReplicatedStore(r *raft.Raft, local *store.Badger, term, tenure uint64, clusterID string, timeout time.Duration, onFence func()) *replicatedStore {
	l := local.Limits()
	// Leave room for the FSM's state op, written with every batch.
	if l.MaxEntries > 0 {
		l.MaxEntries--
	}
	if l.MaxBytes > 0 {
		l.MaxBytes -= stateRoom
	}
	return &replicatedStore{raft: r, local: local, term: term, tenure: tenure, clusterID: clusterID, timeout: timeout, limits: l, onFence: onFence,
		down: make(chan struct{})}
}

// errFenced is the cause carried by writes refused after the tenure ended.
var errFenced = errors.New("cluster: leader tenure ended")

// fence ends the tenure with cause.
func (s *replicatedStore) fence(cause error) {
	s.mu.Lock()
	first := s.fenced == nil
	if first {
		s.fenced = cause
		if s.fencedC != nil {
			close(s.fencedC)
		}
	}
	s.mu.Unlock()
	if first && s.onFence != nil {
		s.onFence()
	}
}

func (s *replicatedStore) isFenced() bool { return s.fenceCause() != nil }

// fencedCh returns a channel closed once the tenure is fenced (at once
// when it is already): a fence by a failed write changes nothing Raft
// observes, and a watch of the tenure (watchTenure) waits for it too.
func (s *replicatedStore) fencedCh() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fencedC == nil {
		s.fencedC = make(chan struct{})
		if s.fenced != nil {
			close(s.fencedC)
		}
	}
	return s.fencedC
}

// apply replicates one entry and reports its outcome as the engine needs
// it: nil (committed and applied), an error matching equeue.ErrNotLeader
// (not stored) or one matching equeue.ErrIndeterminate (unknown).
func (s *replicatedStore) apply(data []byte) error {
	f, err := s.start(data)
	if err != nil {
		return err
	}
	return s.finish(f)
}

// start hands data to Raft, behind every entry handed to it before. When
// Raft refuses it at once (the error future ApplyLog returns when it could
// not queue the entry), the tenure is fenced before start returns, so no
// later entry can enter the log after one that never did.
func (s *replicatedStore) start(data []byte) (raft.ApplyFuture, error) {
	s.mu.Lock()
	fenced := s.fenced
	s.mu.Unlock()
	if fenced != nil {
		return nil, refusedFenced(fenced)
	}
	f := s.raft.ApplyLog(raft.Log{Data: data, Extensions: stampID(s.clusterID)}, s.timeout)
	if reflect.ValueOf(f).Kind() != reflect.Pointer {
		// Raft's error future is a value; a queued entry's future a
		// pointer. Whatever the error, the entry is not in the log.
		err := f.Error()
		s.fence(err)
		return nil, fmt.Errorf("%w: %w", equeue.ErrNotLeader, err)
	}
	return f, nil
}

// refusedFenced is the error of a write refused, before it reached Raft,
// because the tenure was fenced with cause: nothing was done, so it
// matches equeue.ErrNotLeader only. A cause of unknown outcome (an earlier
// entry given up, matching equeue.ErrIndeterminate) is told, not wrapped:
// that outcome is the earlier entry's, not this write's.
func refusedFenced(cause error) error {
	if errors.Is(cause, equeue.ErrIndeterminate) {
		return fmt.Errorf("%w: the tenure ended after an earlier entry: %v", equeue.ErrNotLeader, cause)
	}
	return fmt.Errorf("%w: %w", equeue.ErrNotLeader, cause)
}

// raftDown ends the waits for entries still on their way once Raft was
// shut down. The nodes' Raft buffers its apply channel (BatchApplyCh), and
// an entry queued there when Raft shuts down is never answered: its
// future would block for ever, and the engine's close with it.
func (s *replicatedStore) raftDown() { s.giveUp(errRaftDown) }

// giveUp ends the waits for entries still on their way, each with cause
// (matching equeue.ErrIndeterminate: the entry may yet be committed),
// which fences the tenure. The first cause stands.
func (s *replicatedStore) giveUp(cause error) {
	s.downOnce.Do(func() {
		s.downErr = cause
		close(s.down)
	})
}

// errRaftDown is the outcome of an entry Raft was shut down with.
var errRaftDown = fmt.Errorf("%w: raft shut down with the entry on its way", equeue.ErrIndeterminate)

// errClosedUncommitted is the outcome of an entry still on its way when
// the node, closing, stopped waiting for it (Node.Close).
var errClosedUncommitted = fmt.Errorf("%w: the node closed with the entry not yet committed", equeue.ErrIndeterminate)

// await is f's outcome; or, when f is still unanswered, the cause the
// waits were given up with (giveUp), or ctx's error once ctx ends. The
// goroutine waiting on f ends once Raft answers it, at the latest when
// Raft is shut down (gone): an entry Raft never answered then ends with
// raft.ErrRaftShutdown, an unknown outcome (failed).
func (s *replicatedStore) await(ctx context.Context, f raft.ApplyFuture) error {
	done := make(chan error, 1)
	go awaitFuture(f, s.gone, done)
	select {
	case err := <-done:
		return err
	case <-s.down:
		select {
		case err := <-done:
			return err
		default:
			s.fence(s.downErr)
			return s.downErr
		}
	case <-ctx.Done():
		select {
		case err := <-done:
			return err
		default:
			return ctx.Err()
		}
	}
}

// finish waits for f's entry to be committed and applied.
func (s *replicatedStore) finish(f raft.ApplyFuture) error {
	return s.finishContext(context.Background(), f)
}

// finishContext is finish, given up when ctx ends first: it then returns
// ctx's error, the entry's outcome unknown, and leaves the tenure as it
// is (an entry that fails later fails every entry after it too).
func (s *replicatedStore) finishContext(ctx context.Context, f raft.ApplyFuture) error {
	err := s.await(ctx, f)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return fmt.Errorf("the entry's outcome is unknown: %w", err)
	}
	if err == nil {
		if rerr, ok := f.Response().(error); ok && rerr != nil {
			err = rerr
		}
	}
	if err == nil {
		if cause := s.fenceCause(); cause != nil {
			// Stored, but an entry before it may have failed, or the tenure
			// ended while it was on its way: never acknowledge past a failure.
			return fmt.Errorf("%w: %w", equeue.ErrIndeterminate, cause)
		}
		return nil
	}
	return s.failed(err)
}

// mark appends an entry of the tenure that changes nothing in any store
// (the leader's limits again: startTenure wrote them), carrying the
// cluster ID, and returns its index once it is applied. A follower whose
// log holds it took an entry of this cluster (AddVoter). When ctx ends
// first it returns an error matching ctx's.
func (s *replicatedStore) mark(ctx context.Context) (uint64, error) {
	f, err := s.start(encodeLimits(s.tenure, s.local.Limits()))
	if err != nil {
		return 0, err
	}
	if err := s.finishContext(ctx, f); err != nil {
		return 0, err
	}
	return f.Index(), nil
}

// failed fences the tenure with err and says what it means for the entry.
func (s *replicatedStore) failed(err error) error {
	s.fence(err)
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrEnqueueTimeout),
		errors.Is(err, raft.ErrLeadershipTransferInProgress), errors.Is(err, errStaleTenure),
		errors.Is(err, errOffsetMismatch), errors.Is(err, errEntryRefused):
		// Never entered the log, or ignored or refused by every node's FSM.
		return fmt.Errorf("%w: %w", equeue.ErrNotLeader, err)
	default:
		// In the log, and a later leader may commit it (or not).
		return fmt.Errorf("%w: %w", equeue.ErrIndeterminate, err)
	}
}

func (s *replicatedStore) fenceCause() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fenced
}

// Write replicates b as one Raft entry.
func (s *replicatedStore) Write(b *store.Batch) error {
	if b == nil || len(b.Entries)+len(b.Meta) == 0 {
		return nil
	}
	if !s.limits.Allows(b) || !store.KeysFit(b) {
		return fmt.Errorf("%w: the batch exceeds the store's limits", store.ErrBatchTooLarge)
	}
	return s.apply(encodeBatch(s.tenure, b))
}

// WriteAsync hands b to Raft as one entry and returns the wait for its
// outcome, so the engine's writer can have several group commits
// replicating at once (Raft pipelines them to the followers). The log is
// a prefix of what was handed to it, and the first failure fences the
// tenure: every later write is refused and no later wait reports success.
func (s *replicatedStore) WriteAsync(b *store.Batch) (wait func() error) {
	if b == nil || len(b.Entries)+len(b.Meta) == 0 {
		return func() error { return nil }
	}
	if !s.limits.Allows(b) || !store.KeysFit(b) {
		err := fmt.Errorf("%w: the batch exceeds the store's limits", store.ErrBatchTooLarge)
		s.fence(err) // the engine already counts this batch: nothing may follow it
		return func() error { return err }
	}
	f, err := s.start(encodeBatch(s.tenure, b))
	if err != nil {
		return func() error { return err }
	}
	return func() error { return s.finish(f) }
}

// AdmitWrite refuses, with an error matching store.ErrNoSpace, a write the
// leader's own store could not take with a margin to spare
// (store.Badger.Admit). Every node's FSM has to store what the leader
// proposes, and one that cannot breaks (it stops following the log until
// it is reopened), so a leader on a nearly full disk refuses new writes as
// not stored rather than propose them, while the nodes go on applying
// what was committed: their stores keep less free (the margin) than the
// leader asks for.
func (s *replicatedStore) AdmitWrite(b *store.Batch) error {
	if err := s.local.Admit(b); err != nil {
		return err
	}
	if s.admitHook != nil {
		return s.admitHook(b)
	}
	return nil
}

// Sync does nothing: a write returns once the Raft log holding it is
// fsynced on a majority.
func (s *replicatedStore) Sync() error { return nil }

// DeleteRange replicates the deletion.
func (s *replicatedStore) DeleteRange(q store.QueueID, from, to uint64) error {
	return s.apply(encodeRange(entryDelete, s.tenure, q, from, to))
}

// DropQueue replicates the deletion of q.
func (s *replicatedStore) DropQueue(q store.QueueID) error {
	return s.apply(encodeRange(entryDrop, s.tenure, q, 0, 0))
}

// Read reads the local store. The store's RecordsChecked is not passed on,
// so the engine checks each record's own checksum: a segment's checksum
// covers the bytes this node's FSM was given, which came through the Raft
// log and, on a follower, the network, neither of which checks an entry
// when it is read back. Only the record's checksum, computed by the
// leader's engine, covers a record from end to end.
func (s *replicatedStore) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	return s.local.Read(q, from, to, max, maxBytes)
}

func (s *replicatedStore) Bounds(q store.QueueID) (first, next uint64, ok bool, err error) {
	return s.local.Bounds(q)
}

func (s *replicatedStore) GetMeta(key []byte) ([]byte, error) { return s.local.GetMeta(key) }

func (s *replicatedStore) ScanMeta(prefix []byte, fn func(key, value []byte) error) error {
	return s.local.ScanMeta(prefix, fn)
}

// ScanMetaDamaged reads the local store going on past values it cannot
// read back (store.DamagedMetaScanner).
func (s *replicatedStore) ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	return s.local.ScanMetaDamaged(prefix, fn)
}

func (s *replicatedStore) Size() (int64, error) { return s.local.Size() }

func (s *replicatedStore) Limits() store.Limits { return s.limits }

// Reclaim compacts the local store only; every node reclaims its own.
func (s *replicatedStore) Reclaim() error { return s.local.Reclaim() }

// ReclaimContext is Reclaim stopped once ctx is done (store.Badger's).
func (s *replicatedStore) ReclaimContext(ctx context.Context) error {
	return s.local.ReclaimContext(ctx)
}

// Close does not close the local store: the node owns it and outlives
// the engine.
func (s *replicatedStore) Close() error {
	s.fence(errFenced)
	return nil
}
