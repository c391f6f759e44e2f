package cluster

import (
	"encoding/hex"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Without a salt, or with an empty one, the proofs' key is the one of the
// versions before salts: PBKDF2-HMAC-SHA256 of the secret with
// raftKeySalt alone, 100,000 rounds. The expected keys were computed by
// another implementation of PBKDF2 from the secret, the salt and the
// rounds, not by this package, so that a change of the derivation for
// the unsalted case cannot pass unnoticed.
func TestRaftProofKey_UnsaltedIsTheKeyOfVersionsBeforeSalts(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	want, err := hex.DecodeString("2e7ebc39d1e185226128d9ad0a436ff1a396b2a9df25ba3c7e771213b5590126")
	require.NoError(t, err)
	for _, salt := range [][]byte{nil, {}} {
		key, err := raftProofKey(secret, salt)
		require.NoError(t, err)
		assert.Equal(t, want, key, "salt %q", salt)
	}
	// With a salt, PBKDF2's salt is raftKeySalt, a zero byte and the salt.
	want, err = hex.DecodeString("e9a9e0e1d4f40cfd45d7b61f81c220d1ef07bda4600eee647a1c437601b9364b")
	require.NoError(t, err)
	key, err := raftProofKey(secret, []byte("orders-eu"))
	require.NoError(t, err)
	assert.Equal(t, want, key)
}

// A stream of NewSecureStream (a node of a version before salts uses its
// key) and one of NewSaltedSecureStream with an empty salt connect to
// each other either way.
func TestNewSaltedSecureStream_EmptySaltConnectsWithNewSecureStream(t *testing.T) {
	open := func(salted bool) raft.StreamLayer {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		var s raft.StreamLayer
		if salted {
			s, err = NewSaltedSecureStream(l, nil, testSecret, []byte{})
		} else {
			s, err = NewSecureStream(l, nil, testSecret)
		}
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	unsalted, empty := open(false), open(true)
	for _, c := range []struct {
		name     string
		from, to raft.StreamLayer
	}{{"unsalted to empty", unsalted, empty}, {"empty to unsalted", empty, unsalted}} {
		conn, err := c.from.Dial(raft.ServerAddress(c.to.Addr().String()), time.Minute)
		require.NoError(t, err, c.name)
		_ = conn.Close()
	}
}
