package cluster

import (
	"crypto/tls"
	"fmt"
	"io"
)

// The hello of equeue-raft/3 (the secure handshake's, before the one of
// hello.go that Raft's connections start with): each end's proof, and the listener's
// refusal, go in a frame whose header a listener checks before the proof,
// so that bytes of no equeue node (a scanner, another protocol, a
// corrupted stream) are refused as a malformed hello, logged apart from a
// node whose proof does not verify (another secret or salt). So is part
// of a header, the other end closing or stalling after it: a node writes
// its hello in one TLS record, which arrives whole or not at all.
//
// A hello is raftHelloMagic, the version (raftHelloVersion), the kind (helloProof
// or helloRefusal), the payload's length in one byte, and the payload:
// the 32 bytes of the proof, nothing for a refusal.
//
// Nodes of the version before (equeue-raft/2) send bare proofs of 32
// bytes, and raftRefusal for a refusal: the ends agree by ALPN on the
// latest version both offer, so that they still connect with those
// nodes. A bare proof that does not verify cannot be told from 32 random
// bytes: it is logged under a reason of its own.

// raftProtocolV2 is the ALPN protocol of the version with bare proofs.
const raftProtocolV2 = "equeue-raft/2"

// raftProtocols are the versions of the handshake this node speaks, the
// latest first.
var raftProtocols = []string{raftProtocol, raftProtocolV2}

// raftHelloMagic starts a hello.
const raftHelloMagic = "EQRH"

// raftHelloVersion is the hello's version, that of raftProtocol.
const raftHelloVersion = 3

// The kinds of hello.
const (
	helloProof   = 'P'
	helloRefusal = 'R'
)

// raftHelloHeaderLen is the length of a hello's header: magic, version, kind
// and length.
const raftHelloHeaderLen = len(raftHelloMagic) + 3

// errMalformedHello is the error of a connection whose other end agreed
// on raftProtocol and then sent no hello of it.
var errMalformedHello = fmt.Errorf("%w: it sent a malformed hello (no equeue node of this version, or a corrupted stream)", errRaftProof)

// errWrongBareProof is errWrongProof for a node of equeue-raft/2: its
// proof is bare, so random bytes are one too.
var errWrongBareProof = fmt.Errorf("%w (a bare proof of %s: it may be random bytes as well)", errWrongProof, raftProtocolV2)

// framed reports whether c's ends agreed on the version with hellos.
func framed(c *tls.Conn) bool { return c.ConnectionState().NegotiatedProtocol == raftProtocol }

// helloOf is the hello of kind with payload.
func helloOf(kind byte, payload []byte) []byte {
	h := make([]byte, 0, raftHelloHeaderLen+len(payload))
	h = append(h, raftHelloMagic...)
	h = append(h, raftHelloVersion, kind, byte(len(payload)))
	return append(h, payload...)
}

// readHello reads a hello from c: its kind and payload, errMalformedHello
// when what c sent is none, or part of a header only.
func readHello(c io.Reader) (byte, []byte, error) {
	h := make([]byte, raftHelloHeaderLen)
	if n, err := io.ReadFull(c, h); err != nil {
		if n > 0 {
			// A node writes its hello in one TLS record, which arrives
			// whole or not at all: part of a header, the other end
			// closing or stalling after it, comes from no node.
			return 0, nil, fmt.Errorf("%w: %d of %d bytes of a header: %w", errMalformedHello, n, raftHelloHeaderLen, err)
		}
		return 0, nil, fmt.Errorf("%w: %w", errRaftProof, err)
	}
	kind, n := h[len(raftHelloMagic)+1], int(h[len(raftHelloMagic)+2])
	switch {
	case string(h[:len(raftHelloMagic)]) != raftHelloMagic:
		return 0, nil, fmt.Errorf("%w: magic %q", errMalformedHello, h[:len(raftHelloMagic)])
	case h[len(raftHelloMagic)] != raftHelloVersion:
		return 0, nil, fmt.Errorf("%w: version %d", errMalformedHello, h[len(raftHelloMagic)])
	case kind == helloProof && n == proofLen, kind == helloRefusal && n == 0:
	case kind != helloProof && kind != helloRefusal:
		return 0, nil, fmt.Errorf("%w: kind %q", errMalformedHello, kind)
	default:
		return 0, nil, fmt.Errorf("%w: length %d", errMalformedHello, n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(c, p); err != nil {
		return 0, nil, fmt.Errorf("%w: %w", errRaftProof, err)
	}
	return kind, p, nil
}

// refusalOn is what the listener sends on c to a dialler whose proof
// does not verify.
func refusalOn(c *tls.Conn) []byte {
	if framed(c) {
		return helloOf(helloRefusal, nil)
	}
	return raftRefusal[:]
}
