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

// isTempOf reports whether name is one of the temporary files that
// os.CreateTemp makes with the pattern prefix+"*": prefix then one or
// more decimal digits, nothing else.
func isTempOf(name, prefix string) bool {
	digits, ok := strings.CutPrefix(name, prefix)
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

// removeTempFiles removes from dir the temporary files a write of serve
// left when a crash came before their rename, and nothing else: regular
// files named prefix and digits (isTempOf), never a link nor a
// directory. what names the write in errors. A directory that does not
// exist holds none, nor does a path that is no directory.
func removeTempFiles(dir, prefix, what string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		return nil
	case err != nil:
		return fmt.Errorf("look for leftovers of %s: %w", what, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !isTempOf(e.Name(), prefix) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove a leftover of %s: %w", what, err)
		}
	}
	return nil
}
