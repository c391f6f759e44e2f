// Package goid reads the calling goroutine's ID.
package goid

import (
	"bytes"
	"runtime"
	"strconv"
)

// ID returns the calling goroutine's ID, read from the first line of its
// stack trace ("goroutine 7 [running]:"): Go offers no other way to tell
// a goroutine from another. 0 if that line cannot be read. Costly (a
// stack trace): callers take it once per goroutine they start, and only
// on slow paths otherwise.
func ID() uint64 {
	var buf [64]byte
	b := bytes.TrimPrefix(buf[:runtime.Stack(buf[:], false)], []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		if id, err := strconv.ParseUint(string(b[:i]), 10, 64); err == nil {
			return id
		}
	}
	return 0
}
