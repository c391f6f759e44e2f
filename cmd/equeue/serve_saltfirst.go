package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// keepSaltFirst keeps salt (none when empty: noSaltRecord) in dir before
// the node opens anything there (storeSalt), creating dir when it does
// not exist, its parent synced so that the new directory survives a
// crash with the file. undo, called when the node then fails to start,
// removes what it created when dir holds nothing else: a node refused
// before it wrote anything leaves no directory behind, and one that
// failed later keeps the salt it was started with.
func keepSaltFirst(dir string, salt []byte) (undo func(), err error) {
	created := false
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("keep the cluster salt: %w", err)
		}
		created = true
	}
	undo = func() {
		if created {
			removeLoneSalt(dir)
		}
	}
	if created {
		if err := syncParent(dir); err != nil {
			undo()
			return nil, fmt.Errorf("keep the cluster salt: %w", err)
		}
	}
	if err := storeSalt(dir, salt); err != nil {
		undo()
		return nil, err
	}
	return undo, nil
}

// syncParent syncs the directory that holds dir, where the file system
// can sync one.
func syncParent(dir string) error {
	d, err := os.Open(filepath.Dir(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	if err := syncSaltDir(d); err != nil && !dirSyncUnsupported(err) {
		return err
	}
	return nil
}

// removeLoneSalt removes dir when it holds saltFile alone.
func removeLoneSalt(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != saltFile {
		return
	}
	if os.Remove(filepath.Join(dir, saltFile)) == nil {
		_ = os.Remove(dir)
	}
}
