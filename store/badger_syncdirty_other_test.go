//go:build !linux

package store

import "testing"

// needDirtyPageCounts skips a test that counts the dirty pages of Badger's
// logs: only Linux's cachestat tells them (badger_syncdirty_linux_test.go).
func needDirtyPageCounts(t *testing.T) {
	t.Helper()
	t.Skip("counting a file's dirty pages needs Linux's cachestat")
}

// dirtyLogPages is not reached: needDirtyPageCounts skipped the test.
func dirtyLogPages(t *testing.T, _ string) map[string]uint64 {
	t.Helper()
	t.Fatal("dirtyLogPages without needDirtyPageCounts: no dirty page count on this system")
	return nil
}
