//go:build unix

package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// secretFileWarnings are the lines of serve's log that warn about the
// permissions of the cluster secret file.
func secretFileWarnings(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "secret file") && strings.Contains(line, "group or others") {
			out = append(out, line)
		}
	}
	return out
}

// A cluster secret file that group or others may read is taken, as a
// token file is, with a warning naming the file and its mode; one only
// serve's user reads is taken silently. The secret itself is never
// logged.
func TestCluster_SecretFileReadableByOthersWarns(t *testing.T) {
	base := t.TempDir()
	shared := writeSecret(t, base, "shared-secret")
	require.NoError(t, os.Chmod(shared, 0o644))
	private := writeSecret(t, base, "private-secret")
	content, err := os.ReadFile(shared)
	require.NoError(t, err)

	open := startClusterNode(t, base, "n1", true, "--cluster-secret-file", shared)
	closed := startClusterNode(t, base, "n2", true, "--cluster-secret-file", private)
	for _, n := range []*clusterNode{open, closed} {
		eventually(t, 60*time.Second, n.id+" leads", func() bool {
			s, ok := n.status(t)
			return ok && s.Serving
		})
	}
	warned := secretFileWarnings(open.srv.stderr.String())
	if assert.Len(t, warned, 1, "serve's log:\n%s", open.srv.stderr) {
		assert.Contains(t, warned[0], shared)
		assert.Contains(t, warned[0], "0644")
	}
	assert.NotContains(t, open.srv.stderr.String(), strings.TrimSpace(string(content)), "serve's log shows the secret")
	assert.Empty(t, secretFileWarnings(closed.srv.stderr.String()), "a file only serve's user reads is taken silently")
}
