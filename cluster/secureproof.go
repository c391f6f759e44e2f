package cluster

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
)

// How the two ends of a Raft connection of NewSecureStream prove that they
// hold the cluster's secret.
//
// Once TLS 1.3 is set up, each end sends HMAC-SHA256(secret, label ||
// role || keying material), the keying material being exported from the
// TLS session (RFC 8446, 7.5) under label: the proof holds only for this
// session, so one seen on another connection proves nothing here, and
// the roles differ, so an end cannot send the other's proof back. The
// dialler proves first; the listener answers with its own proof only to a
// dialler that proved. Neither end checks the other's certificate: the
// proofs authenticate the session, as a certificate would.

// raftProofLabel names the proof's version and the exported keying
// material.
const raftProofLabel = "equeue raft v1"

// The roles of the two ends in a proof.
const (
	roleDialler  = "dialler"
	roleListener = "listener"
)

// MinRaftSecretLen is the shortest cluster secret NewSecureStream takes,
// in bytes.
const MinRaftSecretLen = 16

// ErrRaftSecretTooShort is returned by NewSecureStream for a secret
// shorter than MinRaftSecretLen bytes.
var ErrRaftSecretTooShort = fmt.Errorf("cluster: the Raft secret must be at least %d bytes", MinRaftSecretLen)

// errRaftProof is the error of a connection whose other end did not prove
// that it holds the cluster's secret.
var errRaftProof = errors.New("cluster: raft connection: the peer did not prove it holds the cluster secret")

// raftProof is the proof of role for the TLS session of c.
func raftProof(secret []byte, role string, c *tls.Conn) ([]byte, error) {
	cs := c.ConnectionState()
	km, err := cs.ExportKeyingMaterial(raftProofLabel, nil, sha256.Size)
	if err != nil {
		return nil, err
	}
	return proofOf(secret, role, km), nil
}

// proofOf is HMAC-SHA256(secret, label || role || km).
func proofOf(secret []byte, role string, km []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(raftProofLabel))
	m.Write([]byte(role))
	m.Write(km)
	return m.Sum(nil)
}

// sendProof writes the proof of role on c.
func sendProof(secret []byte, role string, c *tls.Conn) error {
	p, err := raftProof(secret, role, c)
	if err != nil {
		return err
	}
	_, err = c.Write(p)
	return err
}

// checkProof reads the other end's proof of role from c and checks it.
func checkProof(secret []byte, role string, c *tls.Conn) error {
	want, err := raftProof(secret, role, c)
	if err != nil {
		return err
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("%w: %w", errRaftProof, err)
	}
	if !hmac.Equal(got, want) {
		return errRaftProof
	}
	return nil
}

// proveDialler runs the dialler's side on a TLS client connection whose
// handshake is done.
func proveDialler(secret []byte, c *tls.Conn) error {
	if err := sendProof(secret, roleDialler, c); err != nil {
		return err
	}
	return checkProof(secret, roleListener, c)
}

// proveListener runs the listener's side on a TLS server connection whose
// handshake is done.
func proveListener(secret []byte, c *tls.Conn) error {
	if err := checkProof(secret, roleDialler, c); err != nil {
		return err
	}
	return sendProof(secret, roleListener, c)
}

// handshake sets TLS up on c (as the client when dial) and runs the
// proofs, within c's deadline. It returns the TLS connection.
func handshake(c net.Conn, conf *tls.Config, secret []byte, dial bool) (*tls.Conn, error) {
	if dial {
		tc := tls.Client(c, conf)
		if err := tc.Handshake(); err != nil {
			return nil, err
		}
		return tc, proveDialler(secret, tc)
	}
	tc := tls.Server(c, conf)
	if err := tc.Handshake(); err != nil {
		return nil, err
	}
	return tc, proveListener(secret, tc)
}
