package cluster

import (
	"bytes"
	"errors"

	"github.com/hashicorp/raft"
)

// raft.BootstrapCluster writes a new node's current term, 1, then its
// first entry, the configuration. A node whose second write failed (a
// disk error), or that crashed between the two, holds a term and
// nothing else, which raft.HasExistingState takes for a node that ran:
// a bootstrap ignored, a node with no configuration, which never leads.
// No node that ran holds that: a joiner's first term is an election's
// (2 or more), and a bootstrap's entry is written before the node runs.
// So a node opened with Bootstrap on such a directory finishes the
// bootstrap (cutShortTerm).

// keyCurrentTerm is the stable store's key of the current term, as
// hashicorp/raft names it.
var keyCurrentTerm = []byte("CurrentTerm")

// bootstrapCutShort reports whether logs (the log and stable store) and
// snaps hold what a bootstrap cut short between its two writes leaves: a
// current term of 1, no entry, no snapshot.
func bootstrapCutShort(logs raftLogStore, snaps raft.SnapshotStore) (bool, error) {
	term, err := logs.GetUint64(keyCurrentTerm)
	if err != nil || term != 1 {
		return false, nil // no term (not found), or that of a node that ran
	}
	last, err := logs.LastIndex()
	if err != nil || last != 0 {
		return false, err
	}
	list, err := snaps.List()
	if err != nil {
		return false, err
	}
	return len(list) == 0, nil
}

// cutShortTerm is the stable store of a bootstrap cut short as
// raft.BootstrapCluster is to see it, that of a new node: its current
// term, the 1 the cut bootstrap wrote, reads as none ("not found", as
// Raft's stores say). The bootstrap then runs again whole: it checks the
// configuration (a bootstrap of a new node refuses one naming an ID or an
// address twice, say, and so must this one), writes the term, 1 again,
// and the configuration entry.
type cutShortTerm struct{ raft.StableStore }

func (s cutShortTerm) GetUint64(key []byte) (uint64, error) {
	if bytes.Equal(key, keyCurrentTerm) {
		return 0, errors.New("not found")
	}
	return s.StableStore.GetUint64(key)
}
