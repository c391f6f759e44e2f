//go:build linux || darwin || freebsd

package store

import "syscall"

// diskFree returns the bytes available to an unprivileged process on the
// file system of dir.
func diskFree(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), nil
}
