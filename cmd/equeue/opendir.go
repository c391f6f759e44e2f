package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// openMode says what a command may do to an engine directory.
type openMode int

const (
	// readOnly commands (topic list, topic describe, groups, stats, dlq
	// list, peek) open an existing engine without changing a byte of it.
	readOnly openMode = iota
	// readWrite commands change an existing engine (produce, consume, ...).
	readWrite
	// create commands (topic create, serve, bench) may make a new engine in
	// a missing or empty directory.
	create
)

// badgerManifest is the file every Badger directory holds; a directory
// without it holds no engine.
const badgerManifest = "MANIFEST"

// checkDir refuses a directory a command must not open: a missing or empty
// one unless the command creates an engine, and one holding files of
// something else, whatever the command, so no engine files are written
// among them.
func checkDir(dir string, mode openMode) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if mode == create {
			return nil
		}
		return fmt.Errorf("directory %s does not exist: create an engine there with \"equeue --dir %s topic create NAME\" (or serve it with \"equeue serve --dir %s\")", dir, dir, dir)
	case err != nil:
		return fmt.Errorf("directory %s: %w", dir, err)
	}
	if len(entries) == 0 {
		if mode == create {
			return nil
		}
		return fmt.Errorf("directory %s is empty, it holds no engine: create one with \"equeue --dir %s topic create NAME\"", dir, dir)
	}
	var names []string
	for _, e := range entries {
		if e.Name() == badgerManifest && e.Type().IsRegular() {
			return nil
		}
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) > 3 {
		names = append(names[:3], "...")
	}
	return fmt.Errorf("directory %s is not an equeue engine directory (it holds %s and no engine files): refusing to write into it; give an engine's directory, or a new or empty one to create an engine", dir, strings.Join(names, ", "))
}

// errReadOnly is what a read-only command's engine answers a write with.
// The engine only writes on its own in the background (retention, sweeps),
// which it logs and retries later, so a read-only command never sees it.
var errReadOnly = errors.New("read-only: this command does not change the engine directory")

// readOnlyStore opens an engine directory for commands that only read: a
// Badger store opened read-only (no file is created or written), whose
// writes are refused before they reach Badger.
type readOnlyStore struct {
	equeue.Store
}

func openReadOnly(dir string, bo store.BadgerOptions) (equeue.Store, error) {
	bo.ReadOnly = true
	b, err := store.OpenBadger(filepath.Clean(dir), &bo)
	if err != nil {
		if strings.Contains(err.Error(), "truncate required") {
			// Badger must cut a log that a crash left half-written: a
			// write, which a read-only open does not make.
			return nil, fmt.Errorf("directory %s was not closed cleanly (the process that held it stopped without closing it), and a read-only command does not repair it: run \"equeue serve --dir %s\" or any command that changes it once, which recovers it: %w", dir, dir, err)
		}
		return nil, err
	}
	return readOnlyStore{b}, nil
}

func (readOnlyStore) Write(*store.Batch) error                        { return errReadOnly }
func (readOnlyStore) DeleteRange(store.QueueID, uint64, uint64) error { return errReadOnly }
func (readOnlyStore) DropQueue(store.QueueID) error                   { return errReadOnly }

// ScanMetaDamaged passes on the store's scan that goes on past values a
// crash lost (store.DamagedMetaScanner), so that a read-only command
// opens such a directory as a read-write one does.
func (r readOnlyStore) ScanMetaDamaged(prefix []byte, fn func(key, value []byte, damaged error) error) error {
	if ds, ok := r.Store.(store.DamagedMetaScanner); ok {
		return ds.ScanMetaDamaged(prefix, fn)
	}
	return r.ScanMeta(prefix, func(k, v []byte) error { return fn(k, v, nil) })
}

// Sync and Reclaim have nothing to do when nothing is written.
func (readOnlyStore) Sync() error    { return nil }
func (readOnlyStore) Reclaim() error { return nil }
