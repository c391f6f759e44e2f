package cluster

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/hashicorp/raft"
)

// A cluster has an identity: 16 random bytes the first leader of a
// cluster without one creates (startTenure), which every node keeps in
// its FSM state (stored with each applied entry, so it survives restarts
// and travels in snapshots).
//
// Without it, a node opened on another cluster's directory and added to a
// cluster mixed the two: both logs hold the same terms at the same indexes
// (the bootstrap entry at 1 in term 1, the first election's term 2), so
// Raft's log matching takes the node's own entries for the leader's, and
// the FSM skips entries at or below the applied index its store holds.
//
// So every command entry a node proposes carries the ID in the entry's
// Extensions, every snapshot in its header, and every Raft connection in
// its hello (hello.go: the nodes of two clusters refuse each other's
// connections, so heartbeats and votes do not cross either). A node refuses, before
// Raft sees them (the relay, commitbound.go), AppendEntries calls carrying
// command entries of another ID and InstallSnapshot calls of another ID:
// its store and log stay as they are. A node with no ID yet (a new node,
// or one of a version before it) takes the ID of the first entry it
// applies that carries one; entries and snapshots without one (written by
// such versions) are taken as before.

// ErrForeignCluster is the answer of a node to a leader of another cluster
// (its entries or snapshot carry another cluster ID): the node holds
// another cluster's data, and takes nothing of it. Node.AddVoter returns
// an error matching it when the node it adds refused so.
var ErrForeignCluster = errors.New("cluster: the node belongs to another cluster (its directory holds another cluster's data)")

// clusterIDBytes is the size of a new cluster ID.
const clusterIDBytes = 16

// newClusterID returns a new random cluster ID.
func newClusterID() string {
	b := make([]byte, clusterIDBytes)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return string(b)
}

// showID formats a cluster ID for logs and Status: hex, "none" when empty.
func showID(id string) string {
	if id == "" {
		return "none"
	}
	return fmt.Sprintf("%x", id)
}

// extClusterID tags the Extensions of an entry that carries a cluster ID.
const extClusterID = 1

// stampID returns the Extensions of an entry of the cluster id (nil when
// id is empty).
func stampID(id string) []byte {
	if id == "" {
		return nil
	}
	return append([]byte{extClusterID}, id...)
}

// entryClusterID returns the cluster ID l carries ("" when none).
func entryClusterID(l *raft.Log) string {
	if l.Type != raft.LogCommand || len(l.Extensions) < 2 || l.Extensions[0] != extClusterID {
		return ""
	}
	return string(l.Extensions[1:])
}

// foreignError says that an entry or snapshot of the cluster theirs came to
// a node of the cluster own.
func foreignError(own, theirs string) error {
	return fmt.Errorf("%w: this node's cluster ID is %s, the leader's %s", ErrForeignCluster, showID(own), showID(theirs))
}

// foreignEntries returns an error matching ErrForeignCluster when args
// carries a command entry of a cluster other than own (nil when own is
// empty: a node without an ID takes any).
func foreignEntries(args *raft.AppendEntriesRequest, own string) error {
	if own == "" {
		return nil
	}
	for _, l := range args.Entries {
		if id := entryClusterID(l); id != "" && id != own {
			return foreignError(own, id)
		}
	}
	return nil
}

// A snapshot starts with a header. The first format was the applied index
// alone (8 bytes); the current one is snapMagic, a version byte, the
// applied index and the cluster ID (a length byte, then the ID). No
// applied index starts with snapMagic's first byte.
var snapMagic = []byte("\xffeqsnap")

// snapVersion is the version of the snapshot header this node writes.
const snapVersion = 1

// maxClusterIDBytes bounds a cluster ID read from a snapshot header.
const maxClusterIDBytes = 255

// errSnapshotVersion is the error of a snapshot whose header is of a
// version this node does not read.
var errSnapshotVersion = errors.New("cluster: snapshot header of an unknown version")

// snapHeader is what a snapshot's header holds.
type snapHeader struct {
	applied   uint64
	clusterID string // "" in the first format
}

// appendSnapHeader appends h in the current format.
func appendSnapHeader(b []byte, h snapHeader) []byte {
	b = append(b, snapMagic...)
	b = append(b, snapVersion)
	b = binary.BigEndian.AppendUint64(b, h.applied)
	b = append(b, byte(len(h.clusterID)))
	return append(b, h.clusterID...)
}

// readSnapHeader reads a snapshot's header, of either format.
func readSnapHeader(r io.Reader) (snapHeader, error) {
	var first [8]byte
	if _, err := io.ReadFull(r, first[:]); err != nil {
		return snapHeader{}, err
	}
	if !bytes.Equal(first[:len(snapMagic)], snapMagic) {
		return snapHeader{applied: binary.BigEndian.Uint64(first[:])}, nil
	}
	if v := first[len(snapMagic)]; v != snapVersion {
		return snapHeader{}, fmt.Errorf("%w: version %d (this node reads version %d and the first format)", errSnapshotVersion, v, snapVersion)
	}
	var fixed [9]byte
	if _, err := io.ReadFull(r, fixed[:]); err != nil {
		return snapHeader{}, err
	}
	id := make([]byte, fixed[8])
	if _, err := io.ReadFull(r, id); err != nil {
		return snapHeader{}, err
	}
	return snapHeader{applied: binary.BigEndian.Uint64(fixed[:8]), clusterID: string(id)}, nil
}

// checkSnapshot refuses, with an error matching ErrForeignCluster, an
// InstallSnapshot call of a cluster other than own. It reads the
// snapshot's header from rpc's stream and leaves the stream as it found
// it; a refused call's stream is read to its end, so the connection
// carries the next call.
func checkSnapshot(rpc *raft.RPC, own string) error {
	if own == "" || rpc.Reader == nil {
		return nil
	}
	var seen bytes.Buffer
	h, err := readSnapHeader(io.TeeReader(rpc.Reader, &seen))
	rest := rpc.Reader
	rpc.Reader = io.MultiReader(&seen, rest)
	if err != nil || h.clusterID == "" || h.clusterID == own {
		return nil // Raft's restore fails on a header it cannot read
	}
	_, _ = io.Copy(io.Discard, rest)
	return foreignError(own, h.clusterID)
}
