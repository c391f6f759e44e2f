package cluster

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"unicode"
	"unicode/utf8"
)

// How the two ends of a Raft connection of NewSecureStream prove that they
// hold the cluster's secret.
//
// Both ends offer raftProtocols by ALPN, the latest first; an end that
// finds none was agreed on (the other end runs another version of this
// handshake, or is no equeue node) closes the connection with
// errRaftVersion before it sends or reads a proof. Once TLS 1.3 is set
// up, each end sends, in a hello (securehello.go; bare with a node of
// equeue-raft/2), HMAC-SHA256(key, label || role || keying material), the keying material
// being exported from the TLS session (RFC 8446, 7.5) under label: the
// proof holds only for this session, so one seen on another connection
// proves nothing here, and the roles differ, so an end cannot send the
// other's proof back. The dialler proves first; the listener answers with
// its own proof only to a dialler that proved, and with a refusal to
// one whose proof does not match. Neither end checks the
// other's certificate: the proofs authenticate the session, as a
// certificate would.
//
// The key is derived from the secret once, at start, by PBKDF2-HMAC-SHA256
// with raftKeyIterations rounds (raftProofKey): whoever a node dials sees
// the dialler's proof, and could test guessed secrets against it offline;
// each guess then costs the rounds of PBKDF2, tens of milliseconds of a
// core, instead of one HMAC.
//
// PBKDF2's salt is raftKeySalt, the same for every cluster, unless the
// cluster has a salt of its own (NewSaltedSecureStream): then one table
// of keys computed ahead from guessed secrets serves every cluster
// without a salt, but none with one. The nodes of a cluster share nothing
// before they first connect that the salt could be drawn from (its
// cluster ID is made by its first leader, after the nodes it started
// with connected, and a node added later has none), so a cluster's salt
// is given to each of its nodes, as the secret is. The derivation is the
// same with and without a salt (a salt only adds to PBKDF2's salt), so
// the protocol's version is too: a node whose salt differs proves
// another key, and is refused as one with another secret is, the error
// naming both.

// raftProtocol is the ALPN protocol of this version of the handshake.
const raftProtocol = "equeue-raft/3"

// raftProofLabel names the proof and the exported keying material; the
// same in equeue-raft/2 and /3, whose proofs differ only in their frame.
const raftProofLabel = "equeue raft v2"

// raftKeySalt is PBKDF2's salt for a cluster without a salt of its own,
// and the start of it for one with one: it names this use of the secret.
const raftKeySalt = "equeue raft v2 proof key"

// raftKeyIterations is PBKDF2's rounds: tens of milliseconds of a core
// today. It is part of the protocol: every node must use the same.
const raftKeyIterations = 100_000

// raftProofKey derives the proofs' key from the cluster's secret and its
// salt (none when empty). PBKDF2's salt is raftKeySalt alone without one,
// so the key is that of the nodes of versions before salts; with one, it
// is raftKeySalt, a zero byte and the salt, never raftKeySalt alone.
func raftProofKey(secret, salt []byte) ([]byte, error) {
	s := []byte(raftKeySalt)
	if len(salt) > 0 {
		s = append(append(s, 0), salt...)
	}
	return pbkdf2.Key(sha256.New, string(secret), s, raftKeyIterations, sha256.Size)
}

// The roles of the two ends in a proof.
const (
	roleDialler  = "dialler"
	roleListener = "listener"
)

// MinRaftSecretLen is the shortest cluster secret NewSecureStream takes,
// in bytes.
const MinRaftSecretLen = 16

// MinRaftTextSecretLen is the shortest cluster secret NewSecureStream
// takes, in characters, when it is text (isText): text may be a password
// a person chose, and even random text carries at most 6.6 bits a
// character of ASCII (4 for hexadecimal, 6 for base64), so 32 characters
// of random hexadecimal or base64 are at least 128 bits.
const MinRaftTextSecretLen = 32

// ErrRaftSecretTooShort is returned by NewSecureStream (and
// CheckRaftSecret) for a secret shorter than MinRaftSecretLen bytes, or
// one that is text shorter than MinRaftTextSecretLen characters.
var ErrRaftSecretTooShort = fmt.Errorf("cluster: the Raft secret must be at least %d bytes (%d characters if it is text)", MinRaftSecretLen, MinRaftTextSecretLen)

// ErrRaftSecretWeak is returned by NewSecureStream (and CheckRaftSecret)
// for a secret whose bytes are all the same, which a guess finds at
// once whatever its length.
var ErrRaftSecretWeak = errors.New("cluster: the Raft secret is one byte repeated")

// CheckRaftSecret returns the error NewSecureStream returns for secret,
// nil for one it takes: it refuses a secret shorter than MinRaftSecretLen
// bytes, or that is text (UTF-8 of printable characters and white space
// only: what a person types, with a newline or not) shorter than
// MinRaftTextSecretLen characters (ErrRaftSecretTooShort), and one whose
// bytes are all the same (ErrRaftSecretWeak).
func CheckRaftSecret(secret []byte) error {
	switch {
	case len(secret) < MinRaftSecretLen:
		return fmt.Errorf("%w: it has %d", ErrRaftSecretTooShort, len(secret))
	case isText(secret) && utf8.RuneCount(secret) < MinRaftTextSecretLen:
		return fmt.Errorf("%w: it is text of %d", ErrRaftSecretTooShort, utf8.RuneCount(secret))
	case !slices.ContainsFunc(secret, func(b byte) bool { return b != secret[0] }):
		return ErrRaftSecretWeak
	}
	return nil
}

// isText reports whether b is UTF-8 of printable characters and white
// space only. Random bytes rarely are: 16 of them, once in some hundred
// thousand draws.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if !unicode.IsPrint(r) && !unicode.IsSpace(r) {
			return false
		}
	}
	return true
}

// errRaftVersion is the error of a connection whose other end does not
// offer this version of the handshake.
var errRaftVersion = fmt.Errorf("cluster: raft connection: the peer does not speak this version of the handshake (%s or %s): every node of a cluster must run an equeue whose Raft handshake is the same", raftProtocol, raftProtocolV2)

// errRaftProof is the error of a connection whose other end did not prove
// that it holds the cluster's secret.
var errRaftProof = errors.New("cluster: raft connection: the peer did not prove it holds the cluster secret")

// raftRefusal is what a listener sends in place of its proof to a
// dialler whose proof does not match, before it closes the connection:
// the dialler tells a refusal (errProofRefused) from a connection closed
// for another reason (the listener stopping, or making room for another
// handshake), which says nothing of the secret.
var raftRefusal = sha256.Sum256([]byte("equeue raft v2 proof refused"))

// errProofRefused is the dialler's error when the listener refused its
// proof: the listener holds another secret.
var errProofRefused = fmt.Errorf("%w: it refused this node's proof (another secret, or another cluster salt?)", errRaftProof)

// proofLen is the length of a proof.
const proofLen = sha256.Size

// raftProof is what an end sends on c to prove role for its TLS session:
// the proof in a hello, or bare with a node of equeue-raft/2.
func raftProof(key []byte, role string, c *tls.Conn) ([]byte, error) {
	p, err := bareProof(key, role, c)
	if err != nil || !framed(c) {
		return p, err
	}
	return helloOf(helloProof, p), nil
}

// bareProof is the proof of role for the TLS session of c.
func bareProof(key []byte, role string, c *tls.Conn) ([]byte, error) {
	cs := c.ConnectionState()
	km, err := cs.ExportKeyingMaterial(raftProofLabel, nil, proofLen)
	if err != nil {
		return nil, err
	}
	return proofOf(key, role, km), nil
}

// proofOf is HMAC-SHA256(key, label || role || km).
func proofOf(key []byte, role string, km []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(raftProofLabel))
	m.Write([]byte(role))
	m.Write(km)
	return m.Sum(nil)
}

// sendProof writes the proof of role on c.
func sendProof(key []byte, role string, c *tls.Conn) error {
	p, err := raftProof(key, role, c)
	if err != nil {
		return err
	}
	_, err = c.Write(p)
	return err
}

// checkProof reads the other end's proof of role from c and checks it.
func checkProof(key []byte, role string, c *tls.Conn) error {
	want, err := bareProof(key, role, c)
	if err != nil {
		return err
	}
	if framed(c) {
		kind, got, err := readHello(c)
		switch {
		case err != nil:
			return err
		case kind == helloRefusal && role == roleListener:
			return errProofRefused
		case kind != helloProof:
			return fmt.Errorf("%w: a refusal from a dialler", errMalformedHello)
		case !hmac.Equal(got, want):
			return errWrongProof
		}
		return nil
	}
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil {
		return fmt.Errorf("%w: %w", errRaftProof, err)
	}
	if !hmac.Equal(got, want) {
		if role == roleListener && hmac.Equal(got, raftRefusal[:]) {
			return errProofRefused
		}
		return errWrongBareProof
	}
	return nil
}

// proveDialler runs the dialler's side on a TLS client connection whose
// handshake is done.
func proveDialler(key []byte, c *tls.Conn) error {
	if err := sendProof(key, roleDialler, c); err != nil {
		return err
	}
	return checkProof(key, roleListener, c)
}

// proveListener runs the listener's side on a TLS server connection whose
// handshake is done.
func proveListener(key []byte, c *tls.Conn) error {
	if err := checkProof(key, roleDialler, c); err != nil {
		if errors.Is(err, errWrongProof) {
			_, _ = c.Write(refusalOn(c)) // the dialler learns the secret was refused
		}
		return err
	}
	return sendProof(key, roleListener, c)
}

// handshake sets TLS up on c (as the client when dial) and runs the
// proofs, within c's deadline. It returns the TLS connection.
func handshake(c net.Conn, conf *tls.Config, key []byte, dial bool) (*tls.Conn, error) {
	if dial {
		tc := tls.Client(c, conf)
		if err := agree(tc); err != nil {
			return nil, err
		}
		return tc, proveDialler(key, tc)
	}
	tc := tls.Server(c, conf)
	if err := agree(tc); err != nil {
		return nil, err
	}
	return tc, proveListener(key, tc)
}

// agree runs the TLS handshake of c and checks that both ends agreed on
// one of raftProtocols.
func agree(c *tls.Conn) error {
	if err := c.Handshake(); err != nil {
		return err
	}
	if !slices.Contains(raftProtocols, c.ConnectionState().NegotiatedProtocol) {
		return errRaftVersion
	}
	return nil
}

// serverConfig is the listener's TLS configuration with cert. It offers
// raftProtocols, and TLS picks the first of them the dialler offers too;
// to a dialler that offers none, it offers none, so that TLS is set up
// all the same and agree refuses the dialler with errRaftVersion rather
// than TLS with an alert.
func serverConfig(cert tls.Certificate) *tls.Config { return serverConfigOf(cert, raftProtocols...) }

// serverConfigOf is serverConfig offering protos.
func serverConfigOf(cert tls.Certificate, protos ...string) *tls.Config {
	conf := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}, NextProtos: protos}
	other := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}}
	conf.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		if slices.ContainsFunc(h.SupportedProtos, func(p string) bool { return slices.Contains(protos, p) }) {
			return nil, nil
		}
		return other, nil
	}
	return conf
}
