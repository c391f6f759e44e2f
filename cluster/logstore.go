package cluster

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"

	"github.com/equeue-go/equeue"
)

// The Raft log stores a node can use (Options.LogStore).
const (
	// LogStoreWAL keeps the Raft log in append-only segment files
	// (hashicorp/raft-wal): one fsync per append, so a replicated write
	// waits for two fsyncs in a row (the leader's, then a follower's)
	// instead of four. Each node preallocates 64 MiB segment files. The
	// default for a new directory; Consul's default log store too, though
	// raft-wal still calls itself experimental.
	LogStoreWAL = "wal"
	// LogStoreBolt keeps the Raft log in one bbolt file (raft-boltdb/v2),
	// the log store Consul used by default before raft-wal and Nomad uses.
	// Each append is a bbolt commit: two fsyncs. The default for a
	// directory created with it (before raft-wal became the default).
	LogStoreBolt = "bolt"
)

// raftLogStore is what a node needs of its Raft log store.
type raftLogStore interface {
	raft.LogStore
	raft.StableStore
	io.Closer
}

var errLogStoreMismatch = errors.New("cluster: the directory holds the other Raft log store")

// openLogStore opens the log store kind in dir (with raft-wal segments of
// walSegment bytes, or its default for 0). "" means the one the
// directory holds, or LogStoreWAL for a new one. A directory created with
// one kind refuses the other.
func openLogStore(dir, kind string, walSegment int) (raftLogStore, error) {
	boltPath := filepath.Join(dir, raftDB)
	walDir := filepath.Join(dir, "wal")
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	if kind == "" {
		kind = LogStoreWAL
		if exists(boltPath) {
			kind = LogStoreBolt
		}
	}
	switch kind {
	case LogStoreBolt:
		if exists(walDir) {
			return nil, fmt.Errorf("%w: it has a %q log; open it with LogStore %q", errLogStoreMismatch, LogStoreWAL, LogStoreWAL)
		}
		return raftboltdb.New(raftboltdb.Options{Path: boltPath})
	case LogStoreWAL:
		if exists(boltPath) {
			return nil, fmt.Errorf("%w: it has a %q log; open it with LogStore %q", errLogStoreMismatch, LogStoreBolt, LogStoreBolt)
		}
		if err := os.MkdirAll(walDir, 0o755); err != nil {
			return nil, err
		}
		// raft-wal's Close leaves its metadata database open (and its file
		// locked, so the directory could not be opened again in this
		// process): the node keeps the database and closes it itself.
		meta := &metadb.BoltMetaDB{}
		if walSegment <= 0 {
			walSegment = raftwal.DefaultSegmentSize
		}
		w, err := raftwal.Open(walDir, raftwal.WithMetaStore(meta), raftwal.WithSegmentSize(walSegment))
		if err != nil {
			_ = meta.Close()
			return nil, err
		}
		return &walStore{WAL: w, meta: meta}, nil
	}
	return nil, fmt.Errorf("%w: LogStore %q (want %q or %q)", equeue.ErrInvalidOptions, kind, LogStoreBolt, LogStoreWAL)
}

// walStore is a raft-wal log that also closes its metadata database.
type walStore struct {
	*raftwal.WAL
	meta *metadb.BoltMetaDB
}

// Close closes the log, then its metadata database.
func (w *walStore) Close() error {
	return errors.Join(w.WAL.Close(), w.meta.Close())
}
