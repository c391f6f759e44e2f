package cluster

// NodeSegmentBytes is the segment size (store.BadgerOptions.SegmentBytes) of
// a node's Badger store unless Options.Badger sets one: 16 KiB, far above
// the default value threshold, so the records of a replicated batch are
// packed into few segments that Badger keeps in its value log.
//
// A node writes Badger without a Sync per write (the fsynced Raft log is the
// source of truth; Badger is synced before Raft compacts its log), so the
// value log's second file costs no extra fsync, while each byte is copied
// once instead of into Badger's write-ahead log, a memtable, a level-0
// table and every compaction after it. Every node of a cluster applies
// every entry, so that copying was most of a replicated write's CPU.
// A single engine syncs after each group commit and keeps the store's
// default (segments inline). The figures are in the README (Cluster,
// Performance).
const NodeSegmentBytes = 16 << 10
