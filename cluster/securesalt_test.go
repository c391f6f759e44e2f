package cluster_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// secureSaltedOn sets o's Raft stream to a secure stream with secret and
// salt on o.RaftAddr.
func secureSaltedOn(t testing.TB, o *cluster.Options, secret, salt []byte) {
	t.Helper()
	lis, err := net.Listen("tcp", o.RaftAddr)
	require.NoError(t, err)
	s, err := cluster.NewSaltedSecureStream(lis, nil, secret, salt)
	require.NoError(t, err)
	o.RaftStream, o.RaftAddr = s, s.Addr().String()
}

// Two clusters that hold the same secret, each with a salt of its own,
// are two clusters: a node of the one cannot be added to the other
// (AddVoter says the node refused the leader's handshake), and a node
// with the cluster's own salt joins. A salt makes the key the proofs are
// made with the cluster's own, so that one table of guessed secrets
// computed ahead serves no other cluster.
func TestCluster_SaltedClustersRefuseEachOthersNodes(t *testing.T) {
	saltA, saltB := []byte("cluster a, eu-west"), []byte("cluster b, us-east")
	c := newCluster(t, 3, func(o *cluster.Options) { secureSaltedOn(t, o, clusterSecret, saltA) })
	c.createTopic(t, "t", 1)
	c.waitConverged()
	leader := c.waitLeader()

	open := func(id string, salt []byte) *cluster.Node {
		o := nodeOptions(id, "127.0.0.1:0")
		secureSaltedOn(t, o, clusterSecret, salt)
		n, err := cluster.Open(filepath.Join(t.TempDir(), id), o)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, n.Close()) })
		return n
	}

	other := open("b1", saltB)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := leader.AddVoter(ctx, "b1", other.RaftAddr())
	require.ErrorIs(t, err, cluster.ErrPeerAuthFailed, "the error says why: %v", err)
	assert.Contains(t, err.Error(), "salt", "the error names the salt as a cause")
	assert.Zero(t, other.Status().LastLogIndex, "the node of the other cluster received no entry")

	same := open("a4", saltA)
	require.NoError(t, leader.AddVoter(t.Context(), "a4", same.RaftAddr()))
	eventually(t, 30*time.Second, func() error {
		if s := same.Status(); s.AppliedIndex < leader.Status().AppliedIndex {
			return fmt.Errorf("a4 applied %d of %d", s.AppliedIndex, leader.Status().AppliedIndex)
		}
		return nil
	})
}

// A node without a salt and one with a salt refuse each other, though
// they hold the same secret; a salted stream's salt is part of its key.
func TestNewSaltedSecureStream_UnsaltedAndSaltedRefuseEachOther(t *testing.T) {
	stream := func(salt []byte) raft.StreamLayer {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		s, err := cluster.NewSaltedSecureStream(lis, nil, clusterSecret, salt)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	dial := func(from, to raft.StreamLayer) error {
		c, err := from.Dial(raft.ServerAddress(to.Addr().String()), 30*time.Second)
		if err == nil {
			_ = c.Close()
		}
		return err
	}
	plain, salted, same, empty := stream(nil), stream([]byte("our cluster")), stream([]byte("our cluster")), stream([]byte{})
	assert.ErrorContains(t, dial(plain, salted), "refused this node's proof", "an unsalted node does not connect to a salted one")
	assert.ErrorContains(t, dial(salted, plain), "refused this node's proof", "a salted node does not connect to an unsalted one")
	assert.NoError(t, dial(salted, same), "nodes with the same salt connect")
	assert.NoError(t, dial(empty, plain), "an empty salt is no salt")

	// No salt is NewSecureStream's key: unsalted nodes connect to nodes
	// of a version before salts, whose key this is.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	unsalted, err := cluster.NewSecureStream(lis, nil, clusterSecret)
	require.NoError(t, err)
	defer unsalted.Close()
	assert.NoError(t, dial(unsalted, plain))
	assert.NoError(t, dial(plain, unsalted))
}
