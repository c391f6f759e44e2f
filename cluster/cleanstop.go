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
// losing its bytes. So a node verifies its store when it opens after a stop
// that was not clean, and rebuilds a damaged one from its Raft snapshot and
// log, as a new node would.

// cleanKey is set, in the store, by a node that closed cleanly (Badger
// syncs everything on Close) and removed, durably, when it opens again.
var cleanKey = []byte("\x00cluster/clean")

// openNodeStore opens the node's store in dir and returns it sound: a store
// closed cleanly as it is, any other verified (store.Badger.VerifyRecords),
// and a damaged one moved aside to a sibling directory named
// "engine.damaged-<unix nanoseconds>" and replaced by an empty store, which
// Raft fills from the snapshot and the log when it starts.
func openNodeStore(dir string, bo *store.BadgerOptions, log *slog.Logger) (*store.Badger, error) {
	path := filepath.Join(dir, engineDir)
	st, err := store.OpenBadger(path, bo)
	if err != nil {
		return nil, err
	}
	_, err = st.GetMeta(cleanKey)
	switch {
	case err == nil:
		// Unmark it before anything else is written, so a crash from now
		// on is seen at the next open.
		err = st.Write(&store.Batch{Meta: []store.MetaOp{{Key: cleanKey, Delete: true}}})
		if err == nil {
			err = st.Sync()
		}
		if err != nil {
			_ = st.Close()
			return nil, fmt.Errorf("store: clear the clean-stop mark: %w", err)
		}
		return st, nil
	case !errors.Is(err, store.ErrNotFound):
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
	aside := path + ".damaged-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	if err := os.Rename(path, aside); err != nil {
		return nil, fmt.Errorf("store damaged (%w); moving it aside: %w", verr, err)
	}
	log.Error("store damaged by an unclean stop: moved aside; the node rebuilds it from the Raft snapshot and log",
		"err", verr, "moved_to", aside)
	return store.OpenBadger(path, bo)
}

// markClean records in the store that the node closes cleanly: called once
// nothing writes to the store any more, just before it closes.
func (n *Node) markClean() {
	if n.noCleanMark || n.fsm.err() != nil {
		return // a broken FSM: let the next open verify
	}
	if err := n.st.Write(&store.Batch{Meta: []store.MetaOp{{Key: cleanKey, Value: []byte{1}}}}); err != nil {
		n.log.Warn("clean-stop mark not written; the store is verified when it opens", "err", err)
	}
}
