// Package cluster replicates an equeue engine over three (or five) nodes
// with Raft (github.com/hashicorp/raft), so that losing the leader's
// machine loses no acknowledged message and the cluster goes on serving.
//
// # How it works
//
// Each node (Node) keeps a Badger store, a Raft log (raft-wal, or
// raft-boltdb: see Options.LogStore) and Raft snapshots in its directory.
// The leader runs an engine whose store is replicated: every write the
// engine makes — one group commit of its writer, a retention trim, a
// dropped queue — becomes one Raft entry, and returns once a majority holds
// the entry in its fsynced log and the local FSM applied it. The FSM
// applies committed entries on every node in log order, so every node holds
// the same queues at the same offsets; the last applied index is written
// with each applied batch, so a restart never applies an entry twice.
// Badger itself writes unsynced: the Raft log is the source of truth, and
// Badger is synced before Raft compacts the log.
//
// Leader changes. A node that becomes leader commits a tenure entry —
// after which its store holds everything committed before — and opens an
// engine on its store. Entries carry the tenure of the engine that wrote
// them and the FSM ignores those of an older tenure, so a deposed leader's
// late writes never land on its successor's offsets. Group coordination
// (membership, heartbeats, allocation) is the leader engine's memory;
// committed offsets are replicated; group epochs start above a base made
// from the Raft term, so they rise across leaders. After a failover,
// consumers rejoin and resume from the replicated offsets.
//
// # Using it
//
// Node implements equeue.Broker: producers and consumers in the leader's
// process use it as they use an engine. Package remote serves it
// (remote.NewBackendServer); remote.DialCluster follows the leader. A
// follower refuses every call with a *NotLeaderError (equeue.ErrNotLeader)
// that names the leader's client address; nothing was done. The leader
// refuses calls the same way while it does not hold its lease (a majority
// of the voters answered it within the last nine tenths of the heartbeat
// timeout; Status.LeaseHeld): a leader cut off or paused never serves a
// read that misses a newer leader's writes. A write whose
// Raft entry may or may not be committed (leadership lost while it waited)
// fails with equeue.ErrIndeterminate: send again with the same message IDs
// on a topic with a dedup window to store it at most once.
//
// Raft's traffic runs on plain TCP unless Options.RaftStream says
// otherwise, and plain TCP takes Raft calls from whoever reaches RaftAddr:
// a forged call of a later term deposes the leader. NewSecureStream
// authenticates every node by a secret they share, over TLS 1.3;
// NewSaltedSecureStream also gives the cluster a salt of its own for the
// key derived from the secret.
//
// A Node is safe for concurrent use. Close it when done; CloseContext
// bounds the wait for a close on a disk that does not answer (it returns
// an error matching equeue.ErrCloseAbandoned when its context ends, and
// the close goes on in the background).
package cluster
