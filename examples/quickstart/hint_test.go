package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The closing line tells what fits the run: a run in a folder the user
// gave keeps it, so it says to run again with that folder (not to give
// one); a run in a temporary folder says to give one.
func TestQuickstart_ClosingLineFitsTheFolder(t *testing.T) {
	dir := t.TempDir()
	var kept bytes.Buffer
	require.NoError(t, run(dir, &kept))
	assert.NotContains(t, kept.String(), "give a folder")
	assert.Contains(t, kept.String(), "run again with "+dir)

	t.Setenv("TMPDIR", t.TempDir())
	var temp bytes.Buffer
	require.NoError(t, runInTemp(&temp))
	assert.Contains(t, temp.String(), "give a folder as argument")
}
