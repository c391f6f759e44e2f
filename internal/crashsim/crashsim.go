// Package crashsim does to a closed store's files what a machine crash
// does, for tests: it loses the bytes the operating system had not
// written back.
package crashsim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// CutValueLogTail cuts cut bytes off the largest Badger value-log file in
// dir, as a machine crash loses what the OS had not written back. The file
// must hold more than atLeast bytes (what the test wrote is in the value
// log).
func CutValueLogTail(t testing.TB, dir string, atLeast, cut int64) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	require.NoError(t, err)
	var largest string
	var size int64
	for _, f := range files {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		if fi.Size() > size {
			largest, size = f, fi.Size()
		}
	}
	require.Greater(t, size, atLeast, "what the test wrote is in the value log")
	require.NoError(t, os.Truncate(largest, size-cut))
}
