package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/equeue-go/equeue/store"
	"github.com/hashicorp/raft"
)

// Test hooks: what the tests of package cluster_test need of the inside.

// ErrOffsetMismatch exports errOffsetMismatch.
var ErrOffsetMismatch = errOffsetMismatch

// ApplyRaw replicates a batch entry of tenure holding b through n's Raft,
// as a leader's engine would, and returns the FSM's answer (nil when it
// was applied).
func ApplyRaw(n *Node, tenure uint64, b *store.Batch) error {
	f := n.raft.Apply(encodeBatch(tenure, b), n.opts.ApplyTimeout)
	if err := f.Error(); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok {
		return err
	}
	return nil
}

// TenureOf returns the tenure n's store holds as current (0: none).
func TenureOf(n *Node) uint64 { return n.fsm.current().tenure }

// StoreOf returns n's Badger store.
func StoreOf(n *Node) *store.Badger { return n.st }

// SetWALSegmentSize makes o's raft-wal log use segments of n bytes, so
// that a test's log rotates and drops old segments.
func SetWALSegmentSize(o *Options, n int) { o.walSegmentSize = n }

// SetLogStoreHook makes o's node wrap its Raft log store (under the
// leader's background writer) with hook.
func SetLogStoreHook(o *Options, hook func(raft.LogStore) raft.LogStore) { o.logStoreHook = hook }

// SetNoHello makes o's node open its Raft connections without a hello, as
// a version before hellos did.
func SetNoHello(o *Options) { o.noHello = true }

// StoredApplied returns the last entry n's FSM stored as applied (Raft's
// AppliedIndex counts entries handed to the FSM, not applied by it).
func StoredApplied(n *Node) uint64 { return n.fsm.current().applied }

// StoreSegmentBytes is the segment size of the node's Badger store.
func (n *Node) StoreSegmentBytes() int64 { return n.st.SegmentBytes() }

// CloseUnclean closes the node as Close does but leaves its store not
// marked clean, as a crash would (cleanstop.go).
func (n *Node) CloseUnclean() error {
	n.noCleanMark = true
	return n.Close()
}

// CleanKey is the store's clean-stop mark.
var CleanKey = cleanKey

// Watermark returns q's low watermark as n's store holds it (0: none).
func Watermark(n *Node, q store.QueueID) (uint64, error) {
	v, err := n.st.GetMeta(watermarkKey(q))
	if errors.Is(err, store.ErrNotFound) {
		return 0, nil
	}
	if err != nil || len(v) != 8 {
		return 0, fmt.Errorf("watermark of %v: %q, %w", q, v, err)
	}
	return binary.BigEndian.Uint64(v), nil
}

// BreakStore marks n's FSM broken with err, as a failed write to its
// store does.
func BreakStore(n *Node, err error) { _ = n.fsm.fail(err) }

// DropLease makes the leader n hold no lease (as while it hands its
// leadership over) until RestoreLease.
func DropLease(n *Node) { n.lease.transferring.Store(true) }

// RestoreLease undoes DropLease.
func RestoreLease(n *Node) { n.lease.transferring.Store(false) }

// SetAdmitHook makes o's node, as leader, ask hook after its store
// admitted a write (replicatedStore.AdmitWrite).
func SetAdmitHook(o *Options, hook func(*store.Batch) error) { o.admitHook = hook }

// FSMError returns the error n's FSM broke with (nil while it follows the
// log).
func FSMError(n *Node) error { return n.fsm.err() }

// SetFSMWriteHook makes o's node's FSM ask hook before each store write of
// records; an error fails the write as the store's would.
func SetFSMWriteHook(o *Options, hook func(*store.Batch) error) { o.fsmWriteHook = hook }

// HandedIndex is the last Raft entry n's FSM was handed (applied or
// answered with an error).
func HandedIndex(n *Node) uint64 {
	n.fsm.applyMu.Lock()
	defer n.fsm.applyMu.Unlock()
	return n.fsm.handed
}

// LastIndex is the last entry of n's Raft log.
func LastIndex(n *Node) uint64 { return n.raft.LastIndex() }

// SetFullDiskRetry sets how often o's node retries entries its store
// refused for a full disk while nothing new is committed.
func SetFullDiskRetry(o *Options, every time.Duration) { o.fullDiskRetry = every }

// SetFollowerReclaim makes o's node reclaim its store every interval while
// it follows, running hook before each reclaim.
func SetFollowerReclaim(o *Options, every time.Duration, hook func()) {
	o.followerReclaim, o.reclaimHook = every, hook
}

// ErrStoreLimits exports errStoreLimits.
var ErrStoreLimits = errStoreLimits

// AddNonvoter adds id at addr to the leader n's configuration as a
// non-voter, and stays so (AddVoter makes it a voter once caught up).
func AddNonvoter(n *Node, id, addr string) error {
	return n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, changeTimeout).Error()
}

// FollowerEntries returns how many servers the leader's per-follower
// progress (lag.go) holds anything of.
func FollowerEntries(n *Node) int {
	t := n.ptrans
	t.mu.Lock()
	defer t.mu.Unlock()
	ids := map[raft.ServerID]bool{}
	for id := range t.peers {
		ids[id] = true
	}
	for id := range t.sent {
		ids[id] = true
	}
	for id := range t.matched {
		ids[id] = true
	}
	for id := range t.refused {
		ids[id] = true
	}
	return len(ids)
}

// ChangeStatus exports changeStatus.
var ChangeStatus = changeStatus

// AcceptedConns counts the Raft connections other nodes opened to n that
// are still open (stream.go).
func (n *Node) AcceptedConns() int {
	n.stream.mu.Lock()
	defer n.stream.mu.Unlock()
	return len(n.stream.conns)
}

// NewSecureStreamRefusing is NewSecureStream that calls refused with the
// error of each accepted connection whose handshake failed.
func NewSecureStreamRefusing(lis net.Listener, secret []byte, refused func(error)) (raft.StreamLayer, error) {
	return newSecureStream(lis, nil, secret, nil, secureHandshakeTimeout, refused)
}
