//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// diskUsage returns the bytes fi takes on disk: its allocated blocks when
// the file is sparse (Badger preallocates its logs that way), else its
// length.
func diskUsage(fi fs.FileInfo) int64 {
	size := fi.Size()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		if allocated := int64(st.Blocks) * 512; allocated < size {
			return allocated
		}
	}
	return size
}
