//go:build !linux

package store

// releaseMapped does nothing outside Linux.
func releaseMapped(string) {}
