package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// raftWarnings returns the lines of log that warn about the Raft port.
func raftWarnings(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "level=WARN") && strings.Contains(line, "--cluster-raft") {
			out = append(out, line)
		}
	}
	return out
}

// TestCluster_WarnsThatTokensDoNotGuardTheRaftPort starts a cluster node
// with a token and --cluster-insecure-raft, and one with neither tokens
// nor TLS, both without --cluster-secret-file. Their Raft transport
// (--cluster-raft) is plain TCP without authentication: a peer that
// reaches it, with no token, can depose the leader and write the log.
// The node with a token warns that its tokens (and TLS) do not guard that
// port; the node that guards nothing does not single it out.
func TestCluster_WarnsThatTokensDoNotGuardTheRaftPort(t *testing.T) {
	base := t.TempDir()
	serving := func(n *clusterNode, token ...string) bool {
		args := append([]string{"cluster", "status", "--json", "--admin", n.admin}, token...)
		r := cli(t, args...)
		var s statusJSON
		return r.code == 0 && json.Unmarshal([]byte(r.stdout), &s) == nil && s.Serving
	}

	guarded := startClusterNode(t, base, "n1", true, "--token", "ops=all", "--cluster-insecure-raft")
	eventually(t, 60*time.Second, "n1 leads", func() bool { return serving(guarded, "--token", "ops") })
	warned := raftWarnings(guarded.srv.stderr.String())
	if assert.Len(t, warned, 1, "one warning about the Raft port; the log:\n%s", guarded.srv.stderr) {
		assert.Contains(t, warned[0], "no authentication", "it says what is missing")
		assert.Contains(t, warned[0], guarded.raft, "it names the address")
	}

	open := startClusterNode(t, base, "n2", true)
	eventually(t, 60*time.Second, "n2 leads", func() bool { return serving(open) })
	assert.Empty(t, raftWarnings(open.srv.stderr.String()), "a node without tokens or TLS guards no port")
}
