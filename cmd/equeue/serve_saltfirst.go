package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// keepSaltFirst keeps salt (none when empty: noSaltRecord) in dir before
// the node opens anything there (storeSalt), creating dir and the
// parents it lacks, each synced into its parent so that a new directory
// survives a crash with the file. undo, called when the node then fails
// to start, leaves what it found: when dir was new or empty and holds
// the file alone, the file goes, and so do the directories it created. A
// node refused before it wrote anything leaves no trace, and its next
// start is not held to a salt it never ran with; one that failed later,
// or a directory that held anything else, keeps the salt it was started
// with. It replaces no file another start of the node kept meanwhile
// (errSaltKeptMeanwhile).
func keepSaltFirst(dir string, salt []byte) (undo func(), err error) {
	made, err := makeDirs(dir)
	undoDirs := func() {
		for _, d := range made { // deepest first; one that holds anything stays
			if os.Remove(d) != nil {
				return
			}
		}
	}
	if err != nil {
		undoDirs()
		return nil, fmt.Errorf("keep the cluster salt: %w", err)
	}
	lone := len(made) > 0 || dirIsEmpty(dir)
	undo = func() {
		if lone {
			removeLoneSalt(dir)
		}
		undoDirs()
	}
	if err := storeSalt(dir, salt); err != nil {
		if errors.Is(err, errSaltKeptMeanwhile) {
			undoDirs() // the file is the other start's
		} else {
			undo()
		}
		return nil, err
	}
	return undo, nil
}

// makeDirs creates dir and the parents it lacks, each synced into its
// parent where the file system can sync one, and returns those it
// created, deepest first.
func makeDirs(dir string) (made []string, err error) {
	var missing []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		missing = append(missing, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	for i := len(missing) - 1; i >= 0; i-- {
		d := missing[i]
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return made, err
		} else if err == nil {
			made = append([]string{d}, made...)
		}
		if err := syncParent(d); err != nil {
			return made, err
		}
	}
	return made, nil
}

// dirIsEmpty reports whether dir holds nothing.
func dirIsEmpty(dir string) bool {
	entries, err := os.ReadDir(dir)
	return err == nil && len(entries) == 0
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

// removeLoneSalt removes saltFile from dir when dir holds it alone.
func removeLoneSalt(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 || entries[0].Name() != saltFile {
		return
	}
	_ = os.Remove(filepath.Join(dir, saltFile))
}
