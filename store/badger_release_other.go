//go:build !linux

package store

// releaseMapped does nothing outside Linux.
func releaseMapped(string) {}

// mappedResident reports that resident mapped pages cannot be read (-1).
func mappedResident() int64 { return -1 }
