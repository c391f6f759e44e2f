package cluster

import (
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
// bootstrap (finishBootstrap).

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

// finishBootstrap writes the first entry of a bootstrap cut short: the
// configuration, at index 1 of term 1, as raft.BootstrapCluster writes
// it.
func finishBootstrap(logs raft.LogStore, conf raft.Configuration) error {
	return logs.StoreLog(&raft.Log{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(conf)})
}
