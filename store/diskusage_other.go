//go:build !unix

package store

import "io/fs"

// diskUsage returns the length of fi; this platform does not report
// allocated blocks.
func diskUsage(fi fs.FileInfo) int64 {
	return fi.Size()
}
