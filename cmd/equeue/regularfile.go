package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// errNotRegularFile is the error of a file serve reads a key or a salt
// from that is no regular file once links are followed: a named pipe, a
// device, a directory or a socket.
var errNotRegularFile = errors.New("not a regular file")

// openRegular opens path for reading if it is a regular file, after its
// links. Anything else is refused with errNotRegularFile, saying what it
// is, before an open that could wait: the open of a named pipe waits for
// a writer, and the start that reads it would wait for ever. The open
// itself does not wait either (openNoWait), so that a file replaced by a
// named pipe between the check and the open is refused too.
func openRegular(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular(st.Mode())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNoWait, 0)
	if err != nil {
		return nil, err
	}
	if st, err = f.Stat(); err == nil && !st.Mode().IsRegular() {
		err = notRegular(st.Mode())
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// readRegular reads path if it is a regular file (openRegular): at most
// limit+1 bytes, so that the caller tells a file larger than limit.
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit+1))
}

// notRegular is errNotRegularFile for a file of mode.
func notRegular(mode fs.FileMode) error {
	what := "a " + mode.Type().String()
	switch {
	case mode&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case mode.IsDir():
		what = "a directory"
	case mode&fs.ModeSocket != 0:
		what = "a socket"
	case mode&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%w: %s", errNotRegularFile, what)
}
