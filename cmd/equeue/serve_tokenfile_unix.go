//go:build unix

package main

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

// wakeFIFOOpen opens path for writing without waiting, and closes it at
// once, if it is a named pipe: an open of it for reading that waits for a
// writer then returns, and reads nothing. It reports whether it did so
// (woke), and whether to try again (again): path is a named pipe that no
// one has open for reading yet.
func wakeFIFOOpen(path string) (woke, again bool) {
	st, err := os.Stat(path)
	if err != nil || st.Mode()&fs.ModeNamedPipe == 0 {
		return false, false
	}
	w, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false, errors.Is(err, syscall.ENXIO)
	}
	_ = w.Close()
	return true, false
}
