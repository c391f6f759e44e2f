//go:build !(linux || darwin || freebsd)

package store

import "errors"

// diskFree is not implemented here: the free-space check lets every write
// in (see badger_space.go).
func diskFree(string) (int64, error) {
	return 0, errors.New("store: free disk space is not known on this platform")
}
