package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// saltTempPrefix starts the names of the temporary files storeSalt
// writes a salt to before it puts the file in place: os.CreateTemp adds
// decimal digits.
const saltTempPrefix = saltFile + ".tmp"

// isSaltTemp reports whether name is one of storeSalt's temporary files:
// saltTempPrefix then one or more decimal digits, nothing else.
func isSaltTemp(name string) bool {
	digits, ok := strings.CutPrefix(name, saltTempPrefix)
	if !ok || digits == "" {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// removeSaltTemps removes from dir the temporary files of storeSalt that
// a crash before their rename left, and nothing else: regular files of
// its naming (isSaltTemp). Left there, they would outlive every start,
// and make a directory that holds nothing else look like one that holds
// a node's files (keepSaltFirst). A directory that does not exist holds
// none, nor does a path that is no directory: the node's open refuses
// it later, after serve built its exporters, which it then shuts down.
func removeSaltTemps(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil
	case err != nil:
		return fmt.Errorf("look for leftovers of the cluster salt's write: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isSaltTemp(e.Name()) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove a leftover of the cluster salt's write: %w", err)
		}
	}
	return nil
}
