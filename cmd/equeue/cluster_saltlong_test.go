package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A --cluster-salt longer than the node keeps in its directory is a
// usage error at the first start, before the node creates anything.
// Before, the node started and kept the salt, and then every later start
// failed, with the same flag or without it: the kept file was "not a
// cluster salt" for being longer than serve reads back.
func TestCluster_SaltLongerThanTheNodeKeepsIsAUsageError(t *testing.T) {
	base := t.TempDir()
	secretFile := writeSecret(t, base, "secret")
	dir := filepath.Join(base, "n1")
	long := strings.Repeat("s", maxSaltFileBytes+1)
	srv := startServe(t, "--dir", dir, "--listen", freePort(t), "--cluster-id", "n1", "--cluster-raft", freePort(t),
		"--cluster-admin", freePort(t), "--cluster-bootstrap", "--cluster-secret-file", secretFile, "--cluster-salt", long)
	select {
	case <-srv.done:
	case <-time.After(time.Minute):
		t.Fatalf("serve with a salt of %d bytes still runs: %.300s", len(long), srv.stderr)
	}
	out := srv.stderr.String()
	assert.Equal(t, exitUsage, srv.cmd.ProcessState.ExitCode(), "%.300s", out)
	assert.Contains(t, out, "--cluster-salt", "%.300s", out)
	_, err := os.Stat(dir)
	assert.ErrorIs(t, err, os.ErrNotExist, "a refused node creates no directory")
}

// The longest salt the flag takes is one the node reads back from its
// directory.
func TestKeptSalt_ReadsBackTheLongestSaltTheFlagTakes(t *testing.T) {
	dir := t.TempDir()
	salt := []byte(strings.Repeat("s", maxSaltFileBytes))
	require.NoError(t, storeSalt(dir, salt))
	got, store, err := keptSalt(dir, salt, true)
	require.NoError(t, err)
	assert.Equal(t, salt, got)
	assert.Equal(t, saltKept, store, "it is kept already")
	got, _, err = keptSalt(dir, nil, false)
	require.NoError(t, err)
	assert.Equal(t, salt, got, "without the flag")
}
