package crashsim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCutValueLogTail_CutsTheLargestFile(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000001.vlog"), make([]byte, 100), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000002.vlog"), make([]byte, 500), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "000003.sst"), make([]byte, 900), 0o600))
	CutValueLogTail(t, dir, 400, 120)
	for name, want := range map[string]int64{"000001.vlog": 100, "000002.vlog": 380, "000003.sst": 900} {
		fi, err := os.Stat(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, want, fi.Size(), name)
	}
}

func TestFlipInLastValueLog_FlipsTheMarkerInTheLastFile(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"000001.vlog", "000002.vlog"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("..here..here"), 0o600))
	}
	FlipInLastValueLog(t, dir, []byte("here"))
	for name, want := range map[string]string{"000001.vlog": "..here..here", "000002.vlog": "..\x97ere..here"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, want, string(got), name)
	}
}
