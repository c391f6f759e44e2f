package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A secret file that a guess finds at once is a usage error, refused
// before serve creates its directory: one byte repeated, and text shorter
// than 32 characters.
func TestCluster_WeakSecretFileIsAUsageError(t *testing.T) {
	base := t.TempDir()
	for _, tc := range []struct{ name, content, want string }{
		{"repeated", strings.Repeat("x", 40) + "\n", "one byte repeated"},
		{"short-text", "correct horse battery\n", "32 characters if it is text"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(base, tc.name)
			require.NoError(t, os.WriteFile(p, []byte(tc.content), 0o600))
			dir := filepath.Join(base, "data-"+tc.name)
			r := cli(t, "serve", "--dir", dir, "--listen", freePort(t), "--cluster-id", "n1",
				"--cluster-raft", freePort(t), "--cluster-bootstrap", "--cluster-secret-file", p)
			assert.Equal(t, exitUsage, r.code, "%v", r)
			assert.Contains(t, r.stderr, "--cluster-secret-file "+p)
			assert.Contains(t, r.stderr, tc.want)
			assert.NoDirExists(t, dir, "serve created its directory")
		})
	}
}
