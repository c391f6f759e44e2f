package main

import (
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/cluster"
)

// writeSecret writes a cluster secret file as the README makes one: 32
// random bytes in base64, with a newline.
func writeSecret(t *testing.T, dir, name string) string {
	t.Helper()
	b := make([]byte, 32)
	_, err := rand.Read(b)
	require.NoError(t, err)
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, []byte(base64.StdEncoding.EncodeToString(b)+"\n"), 0o600))
	return p
}

// forgeAppendEntries sends addr one AppendEntries of term from
// "intruder", as a peer with no token and no secret would, and returns the
// call's error.
func forgeAppendEntries(t *testing.T, addr string, term uint64) error {
	t.Helper()
	tr, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	require.NoError(t, err)
	defer tr.Close()
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(tr.LocalAddr())},
		Term:      term,
	}
	var resp raft.AppendEntriesResponse
	return tr.AppendEntries("n1", raft.ServerAddress(addr), req, &resp)
}

// A cluster node with a token and --cluster-secret-file refuses a Raft
// call from a peer without the secret: a forged AppendEntries of a later
// term leaves the leader leading, in its term. Nodes with the same file
// form a cluster; a peer with another secret cannot connect.
func TestCluster_SecretFileGuardsTheRaftPort(t *testing.T) {
	base := t.TempDir()
	secret := writeSecret(t, base, "secret")
	guard := []string{"--token", "ops=all", "--cluster-secret-file", secret}
	n1 := startClusterNode(t, base, "n1", true, guard...)
	status := func(n *clusterNode) (statusJSON, bool) {
		r := cli(t, "cluster", "status", "--json", "--admin", n.admin, "--token", "ops")
		var s statusJSON
		return s, r.code == 0 && jsonInto(r.stdout, &s)
	}
	var before statusJSON
	eventually(t, 60*time.Second, "n1 leads", func() bool {
		s, ok := status(n1)
		before = s
		return ok && s.Serving
	})
	assert.Empty(t, raftWarnings(n1.srv.stderr.String()), "a node with a secret does not warn")

	assert.Error(t, forgeAppendEntries(t, n1.raft, before.Term+100), "the forged call is refused")
	after, ok := status(n1)
	require.True(t, ok)
	assert.Equal(t, "Leader", after.State)
	assert.Equal(t, "n1", after.LeaderID)
	assert.Equal(t, before.Term, after.Term, "the forged term did not reach Raft")

	n2 := startClusterNode(t, base, "n2", false, guard...)
	r := cli(t, "cluster", "add", "n2", n2.raft, "--admin", n1.admin, "--token", "ops")
	require.Zero(t, r.code, "%v", r)
	eventually(t, 60*time.Second, "n2 follows n1", func() bool {
		s, ok := status(n2)
		return ok && s.LeaderID == "n1" && len(s.Servers) == 2
	})

	// The secret is the file's content without its newline: a peer
	// with it connects, a peer with another one does not.
	content, err := os.ReadFile(secret)
	require.NoError(t, err)
	c, err := dialSecure(t, n1.raft, []byte(strings.TrimSuffix(string(content), "\n")))
	require.NoError(t, err, "a peer with the file's secret connects")
	_ = c.Close()
	_, err = dialSecure(t, n1.raft, content)
	require.Error(t, err, "a peer with another secret (the newline kept) does not")
}

// dialSecure dials addr's Raft port through a secure stream with secret.
func dialSecure(t *testing.T, addr string, secret []byte) (net.Conn, error) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s, err := cluster.NewSecureStream(lis, nil, secret)
	require.NoError(t, err)
	defer s.Close()
	return s.Dial(raft.ServerAddress(addr), 30*time.Second)
}

// A cluster node with tokens or TLS and no --cluster-secret-file refuses
// to start, naming the flag; --cluster-insecure-raft lets it start, with
// the warning.
func TestCluster_GuardedNodeNeedsASecretFile(t *testing.T) {
	base := t.TempDir()
	pki := t.TempDir()
	now := time.Now()
	issue(t, pki, "server", &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, nil, nil)
	node := func(id string, extra ...string) []string {
		return append([]string{"serve", "--dir", filepath.Join(base, id), "--listen", freePort(t),
			"--cluster-id", id, "--cluster-raft", freePort(t), "--cluster-bootstrap"}, extra...)
	}
	fails(t, 2, "--cluster-secret-file", node("tok", "--token", "ops=all")...)
	fails(t, 2, "--cluster-secret-file", node("tls", "--tls-cert", filepath.Join(pki, "server.pem"), "--tls-key", filepath.Join(pki, "server-key.pem"))...)
	_, err := os.Stat(filepath.Join(base, "tok"))
	assert.ErrorIs(t, err, os.ErrNotExist, "a refused node creates no directory")

	short := filepath.Join(base, "short")
	require.NoError(t, os.WriteFile(short, []byte("fifteen bytes!!\n"), 0o600))
	fails(t, 2, "at least 16 bytes", node("short", "--cluster-secret-file", short)...)
	fails(t, 2, "--cluster-insecure-raft", node("both", "--token", "ops=all", "--cluster-insecure-raft", "--cluster-secret-file", writeSecret(t, base, "s"))...)
	// A secret file that cannot be read is a usage error too, as a
	// --token-file that cannot be read is.
	fails(t, 2, "--cluster-secret-file "+filepath.Join(base, "nothing"), node("missing", "--cluster-secret-file", filepath.Join(base, "nothing"))...)
	fails(t, 2, "--cluster-secret-file "+base, node("directory", "--cluster-secret-file", base)...)

	insecure := startClusterNode(t, base, "n1", true, "--token", "ops=all", "--cluster-insecure-raft")
	eventually(t, 60*time.Second, "the insecure node leads", func() bool {
		r := cli(t, "cluster", "status", "--json", "--admin", insecure.admin, "--token", "ops")
		var s statusJSON
		return r.code == 0 && jsonInto(r.stdout, &s) && s.Serving
	})
	warned := raftWarnings(insecure.srv.stderr.String())
	if assert.Len(t, warned, 1) {
		assert.Contains(t, warned[0], "no authentication")
	}
}

// jsonInto decodes s into v, reporting whether it could.
func jsonInto(s string, v any) bool {
	return json.Unmarshal([]byte(s), v) == nil
}
