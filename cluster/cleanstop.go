package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/equeue-go/equeue/store"
)

// A node writes its Badger store without a Sync per write: the fsynced Raft
// log is the source of truth. After a crash of the process, the OS still
// holds every write; after a crash of the machine, Badger's write-ahead log
// comes back as a prefix of what was written, so the store is as it was
// after some applied entry, and Raft applies the rest again. Segments in
// Badger's value log (NodeSegmentBytes, or one large record) are not in
// that write-ahead log: a machine crash may keep a segment's key while
// losing its bytes. A disk may also lose or change bytes of a store that
// was closed cleanly, synced whole. So a node verifies its store every
// time it opens, and rebuilds a damaged one from its Raft snapshot and
// log, as a new node would, rather than serve its records as corrupt while
// the snapshot, the log and its peers hold them sound.

// cleanKey is set, in the store, by a node that closed cleanly (Badger
// syncs everything on Close) and removed, durably, when it opens again. It
// tells damage a crash left, which a machine crash may well leave, from
// damage the disk did to a store closed whole.
var cleanKey = []byte("\x00cluster/clean")

// openNodeStore opens the node's store in dir and returns it sound: it is
// verified (store.Badger.VerifyRecords), and a damaged one is moved aside
// to a sibling directory named "engine.damaged-<unix nanoseconds>",
// durably (the directory is synced after the rename), and replaced by an
// empty store, which Raft fills from the snapshot and the log when it
// starts. Of the stores moved aside, the newest keep are kept
// (pruneDamaged).
func openNodeStore(dir string, bo *store.BadgerOptions, keep int, log *slog.Logger) (*store.Badger, error) {
	return openNodeStoreWith(store.OpenBadger, dir, bo, keep, log)
}

// openNodeStoreWith is openNodeStore opening stores with open (tests: an
// open that fails).
func openNodeStoreWith(open func(string, *store.BadgerOptions) (*store.Badger, error),
	dir string, bo *store.BadgerOptions, keep int, log *slog.Logger) (*store.Badger, error) {
	path := filepath.Join(dir, engineDir)
	st, err := open(path, bo)
	if err != nil {
		return nil, err
	}
	clean, err := takeCleanMark(st)
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	verr := st.VerifyRecords()
	if verr == nil {
		return st, nil
	}
	_ = st.Close()
	if !errors.Is(verr, store.ErrDamaged) {
		return nil, verr
	}
	aside := path + damagedInfix + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := os.Rename(path, aside); err != nil {
		return nil, fmt.Errorf("store damaged (%w); moving it aside: %w", verr, err)
	}
	// A machine crash may lose a rename until the directory is synced: the
	// damaged store would then be back under its name, its move unrecorded.
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("store damaged (%w); moved aside to %s, but the move is not durable: %w", verr, aside, err)
	}
	msg := "store damaged by an unclean stop: moved aside; the node rebuilds it from the Raft snapshot and log"
	if clean {
		msg = "store damaged after a clean stop (check the disk): moved aside; the node rebuilds it from the Raft snapshot and log"
	}
	log.Error(msg, "err", verr, "moved_to", aside)
	// Before the new store opens, which may need the space: only older
	// stores go, never the one just moved aside, so a failed open below
	// leaves it in place (the next Open starts from an empty store).
	pruneDamaged(dir, filepath.Base(aside), keep, log)
	st, err = open(path, bo)
	if err != nil {
		return nil, fmt.Errorf("store damaged (%w) and moved aside to %s; opening a new one: %w", verr, aside, err)
	}
	return st, nil
}

// takeCleanMark reports whether st is marked clean (cleanKey) and removes
// the mark, durably, before anything else is written, so a crash from now
// on is told from a clean stop at the next open.
func takeCleanMark(st *store.Badger) (bool, error) {
	_, err := st.GetMeta(cleanKey)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = st.Write(&store.Batch{Meta: []store.MetaOp{{Key: cleanKey, Delete: true}}})
	if err == nil {
		err = st.Sync()
	}
	if err != nil {
		return false, fmt.Errorf("store: clear the clean-stop mark: %w", err)
	}
	return true, nil
}

// markClean records in the store that the node closes cleanly: called once
// nothing writes to the store any more, just before it closes.
func (n *Node) markClean() {
	if n.noCleanMark || n.fsm.err() != nil {
		return // a broken FSM did not close its store cleanly
	}
	if err := n.st.Write(&store.Batch{Meta: []store.MetaOp{{Key: cleanKey, Value: []byte{1}}}}); err != nil {
		n.log.Warn("clean-stop mark not written; damage found at the next open is taken for a crash's", "err", err)
	}
}
