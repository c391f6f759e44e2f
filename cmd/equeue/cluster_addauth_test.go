package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// `equeue cluster add` of a node that refused the leader's Raft handshake
// (another --cluster-secret-file or --cluster-salt: the node's answer is
// 504, as for a node that did not catch up, with cluster.ErrPeerAuthFailed
// in its text) says to give the node the cluster's secret and salt, not
// to check that the leader reaches it: it did reach it, and was refused.
func TestCluster_AddRefusedHandshakeAdvisesSecretAndSalt(t *testing.T) {
	text := "cluster: add voter n2: cluster: the node did not catch up with the leader's log in time (its log holds up to 0 of 8): context deadline exceeded: " +
		cluster.ErrPeerAuthFailed.Error() + ": 127.0.0.1:7752: cluster: raft connection: the peer did not prove it holds the cluster secret: it refused this node's proof (another secret, or another cluster salt?); removed again"
	admin := fakeAdmin(t, http.StatusGatewayTimeout, `{"error": "`+text+`"}`)
	r := runBounded(t, nil, "cluster", "add", "n2", "127.0.0.1:7752", "--admin", admin)
	require.Equal(t, 1, r.code, "%v", r)
	require.Contains(t, r.stderr, text)
	assert.Contains(t, r.stderr, "--cluster-secret-file", "%v", r)
	assert.Contains(t, r.stderr, "--cluster-salt", "%v", r)
	assert.NotContains(t, r.stderr, "reach its Raft address", "the leader reached the node: %v", r)
}

// peerAuthFailedText is how ErrPeerAuthFailed's text starts, so that the
// advice finds it in the answer of a leader of this version or of one
// before salts.
func TestPeerAuthFailedText_StartsTheSentinelsText(t *testing.T) {
	assert.True(t, strings.HasPrefix(cluster.ErrPeerAuthFailed.Error(), peerAuthFailedText), cluster.ErrPeerAuthFailed.Error())
}
