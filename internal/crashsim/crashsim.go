// Package crashsim does to a closed store's files what a machine crash
// does, for tests: it loses the bytes the operating system had not
// written back, or flips a byte the disk let rot.
package crashsim

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
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

// FlipInLastValueLog flips the first byte of the first occurrence of marker
// in the last Badger value-log file in dir (the one of the highest number,
// which Badger cuts at its first entry that fails its checksum when it
// opens), as a bit rot or a torn write of the disk does. The file must hold
// marker.
func FlipInLastValueLog(t testing.TB, dir string, marker []byte) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.vlog"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "a value-log file")
	slices.Sort(files) // Badger numbers them with a fixed width
	last := files[len(files)-1]
	data, err := os.ReadFile(last)
	require.NoError(t, err)
	at := bytes.Index(data, marker)
	require.GreaterOrEqual(t, at, 0, "%s holds %q", last, marker)
	data[at] ^= 0xff
	require.NoError(t, os.WriteFile(last, data, 0o600))
}
