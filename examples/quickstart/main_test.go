package main

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Without an argument the quickstart works in a temporary folder of its
// own and removes it: nothing grows across runs.
func TestQuickstart_TempFolderIsRemoved(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	for range 2 {
		require.NoError(t, runInTemp())
		entries, err := os.ReadDir(tmp)
		require.NoError(t, err)
		assert.Empty(t, entries, "the run left files behind")
	}
}

// With a folder the data stays, and a second run continues the offsets.
func TestQuickstart_GivenFolderIsKept(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, run(dir))
	require.NoError(t, run(dir))
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.NotEmpty(t, entries)
}
