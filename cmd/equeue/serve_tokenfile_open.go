package main

import (
	"errors"
	"os"
	"time"
)

// tokenFileWait bounds how long serve waits for a --token-file to open and
// to be read to its end: the open of a named pipe waits for a program to
// open it for writing, and a read of a pipe for its writer to write and
// close it, which would otherwise hold serve's start for ever. A variable,
// so that a test can shorten it.
var tokenFileWait = 10 * time.Second

// errTokenFileSilent is openTokenFile's error when the open still waited
// at the deadline.
var errTokenFileSilent = errors.New("token file: nothing to read")

// opened is the outcome of an open.
type opened struct {
	// f is the file opened, nil on an error.
	f *os.File
	// err is the open's error.
	err error
}

// openTokenFile opens path for reading, waiting until deadline at most:
// the open of a named pipe waits until a program opens it for writing. At
// the deadline it returns errTokenFileSilent, once the open that still
// waits is released (see releaseOpen), so that no goroutine stays behind
// it.
func openTokenFile(path string, deadline time.Time) (*os.File, error) {
	done := make(chan opened, 1)
	go func() {
		f, err := os.Open(path)
		done <- opened{f: f, err: err}
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case o := <-done:
		return o.f, o.err
	case <-timer.C:
	}
	releaseOpen(path, done)
	return nil, errTokenFileSilent
}

// releaseWait bounds how long releaseOpen waits for the open it released
// to return, and for a named pipe's open to begin.
const releaseWait = time.Second

// releaseOpen ends an open of path that openTokenFile gave up on, before
// openTokenFile returns: while path is still the named pipe the open
// waits on (whoever made it may remove it once serve failed, and a
// release after that would find nothing to open). If path is a named pipe
// it opens it for writing, without waiting, which lets the open that waits
// for a writer return, and closes the file that open gives. An open of
// anything else that waits (a file system that does not answer) keeps its
// goroutine until it returns, and the file it gives is closed then.
func releaseOpen(path string, done <-chan opened) {
	giveUp := time.NewTimer(releaseWait)
	defer giveUp.Stop()
	for {
		woke, again := wakeFIFOOpen(path)
		var retry <-chan time.Time // nil once woken: the open returns now
		switch {
		case again: // the pipe has no reader yet: the open has not begun
			retry = time.After(10 * time.Millisecond)
		case !woke:
			go func() { closeOpened(<-done) }()
			return
		}
		select {
		case o := <-done:
			closeOpened(o)
			return
		case <-giveUp.C:
			go func() { closeOpened(<-done) }()
			return
		case <-retry:
		}
	}
}

// closeOpened closes the file of o, if any.
func closeOpened(o opened) {
	if o.f != nil {
		_ = o.f.Close()
	}
}
