package cluster

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/raft"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// Peer is one voter named at bootstrap.
type Peer struct {
	// ID is the node's Raft server ID.
	ID string
	// RaftAddr is the host:port its Raft transport listens on.
	RaftAddr string
	// ClientAddr is the address clients reach it at (its gRPC server), told
	// to clients that ask a follower. Optional.
	ClientAddr string
}

// Options configure a Node. A nil *Options is refused: ID and RaftAddr
// are required.
type Options struct {
	// ID names the node in the cluster; it must stay the same across
	// restarts. Required: 1-255 bytes of UTF-8 without control characters
	// (and so for a peer's ID).
	ID string
	// RaftAddr is the host:port the Raft transport listens on and other
	// nodes dial. Required; an unspecified host (0.0.0.0, [::]), or one
	// that is neither an IP address nor a name of ASCII letters, digits,
	// '-', '_' and '.', is refused, as other nodes cannot dial it. Port 0 picks a free port (tests);
	// Node.RaftAddr reports it. The node gives other nodes RaftAddr as
	// given (with the port picked), never the address its host name
	// resolved to, so a DNS name whose address changes across restarts is
	// recorded as the name. A host name is not looked up by the
	// options' check: Open looks it up when it listens on it (and fails,
	// with the lookup's error, when it does not resolve), and the
	// transport when another node dials it. With RaftStream nothing looks
	// it up at Open, so a name that resolves only once the node runs
	// works.
	RaftAddr string
	// RaftStream, when set, carries Raft's traffic instead of plain TCP on
	// RaftAddr: for example NewSecureStream, which authenticates the
	// nodes by a shared secret (plain TCP takes Raft calls from anyone
	// who reaches RaftAddr), or a network a test can cut. Its Addr must be RaftAddr, the address other nodes dial. The
	// node closes it on Close, and Open closes it when it fails.
	RaftStream raft.StreamLayer
	// LogStore chooses the Raft log store: LogStoreWAL ("wal") or
	// LogStoreBolt ("bolt"); see their documentation. Empty means the one
	// the directory already holds, and LogStoreWAL for a new directory. A
	// directory keeps the log store it was created with.
	LogStore string
	// ClientAddr is the address clients reach this node at (its gRPC
	// server). Followers tell clients the leader's. Optional.
	ClientAddr string
	// KafkaAddr is the host:port Kafka clients reach this node at, when
	// it serves the Kafka protocol (package kafka). The node names it in
	// the tenure entry it writes when it becomes the leader, so that
	// every node's Kafka listener can name the leader to Kafka clients
	// (Node.KafkaLeader). Optional; at most 255 bytes. A cluster whose
	// nodes set it writes tenure entries that versions before it do not
	// read: upgrade every node before setting it.
	KafkaAddr string
	// Bootstrap starts a new cluster of Peers (which must include this
	// node; empty Peers means this node alone) when the node's directory
	// holds no Raft state yet. Exactly one node should bootstrap a new
	// cluster, or all with the same Peers.
	// Without it a new node waits until the leader adds it (Node.AddVoter).
	// A node whose directory holds Raft state starts from the
	// configuration stored there, whatever Bootstrap and Peers say: it
	// logs that it ignored them, naming that configuration.
	Bootstrap bool
	// Peers are the voters of a bootstrapped cluster.
	Peers []Peer

	// KeepDamaged is how many of the stores it found damaged the node
	// keeps. A node verifies its store at Open; it moves a damaged one
	// aside, to "engine.damaged-<unix nanoseconds>" in its directory, for
	// an operator to look into, and rebuilds the store from the Raft
	// snapshot and log. Each is a full copy of the store, so when it moves
	// one aside it removes all but the newest KeepDamaged (logging each it
	// removes); the one just moved aside is always kept. Zero means 1;
	// negative is refused.
	KeepDamaged int

	// Engine configures the engine the leader runs. Its Store, InMemory
	// and Badger fields must be unset (the node opens the store). The node
	// sets Sync (a write is acknowledged once a majority has it in its
	// fsynced Raft log, whatever the policy) and EpochBase (from the Raft
	// term). Nil means defaults.
	Engine *equeue.Options
	// Badger tunes the node's Badger store; nil means
	// store.DefaultBadgerOptions(). Either way a zero SegmentBytes becomes
	// NodeSegmentBytes.
	Badger *store.BadgerOptions

	// HeartbeatTimeout and ElectionTimeout are how long a follower goes
	// without hearing from the leader before it starts an election. Zero
	// means 1 s each (Raft's defaults). A node that ran before starts its
	// Raft member no sooner than HeartbeatTimeout after Open began, so
	// that it keeps the lease its last answers granted (lease.go). Give
	// every node the same HeartbeatTimeout: a leader's lease lasts nine
	// tenths of its own, on the promise that a follower waits its own
	// before it votes for another node.
	HeartbeatTimeout time.Duration
	ElectionTimeout  time.Duration // see HeartbeatTimeout
	// LeaderLeaseTimeout is how long a leader goes without reaching a
	// majority before it steps down. Zero means 500 ms.
	LeaderLeaseTimeout time.Duration
	// ApplyTimeout bounds the wait to hand a write to Raft (not the wait
	// for its commit). Zero means 10 s.
	ApplyTimeout time.Duration
	// SnapshotThreshold is how many new log entries trigger a snapshot;
	// TrailingLogs how many entries a snapshot leaves in the log for slow
	// followers; SnapshotInterval how often the threshold is checked. An
	// entry is one writer batch (up to the store's batch limit, megabytes
	// for bulk sends), so the log holds up to about threshold + trailing
	// entries; a snapshot copies the whole store. Zero means 4096, 1024
	// and 2 min.
	SnapshotThreshold uint64
	TrailingLogs      uint64        // see SnapshotThreshold
	SnapshotInterval  time.Duration // see SnapshotThreshold

	// OnEngine, when set, is called with the engine when the node starts
	// serving as leader, and with nil when it stops (to attach metrics,
	// for one). It runs on the node's own goroutine: keep it short. A
	// panic in it there is recovered and logged (Logger, at error level),
	// and the node goes on; one in the call Close makes reaches Close's
	// caller (equeue.ErrCloseUnfinished).
	OnEngine func(e *equeue.Engine)

	// Logger receives the node's logs. Nil means silent.
	Logger *slog.Logger
	// RaftLog receives the Raft library's own logs. Nil means silent.
	RaftLog io.Writer

	// walSegmentSize, when positive, is raft-wal's segment size (tests).
	walSegmentSize int
	// logStoreHook, when set, wraps the Raft log store under leaderLog
	// (tests: a slow or failing disk).
	logStoreHook func(raft.LogStore) raft.LogStore
	// bootstrapLogHook, when set, wraps the Raft log store a bootstrap
	// writes its first entry to (tests: a failing disk, or a crash,
	// between the bootstrap's writes).
	bootstrapLogHook func(raft.LogStore) raft.LogStore
	// admitHook, when set, is asked after the leader's own admission of
	// a write (replicatedStore.AdmitWrite; tests).
	admitHook func(*store.Batch) error
	// fsmWriteHook, when set, is asked before each of the FSM's store
	// writes of records (tests).
	fsmWriteHook func(*store.Batch) error
	// fullDiskRetry, when set, replaces fullDiskRetry (tests).
	fullDiskRetry time.Duration
	// fullDiskRetryHook, when set, runs before each of the node's timed
	// full-disk retries (fsm.retry; tests).
	fullDiskRetryHook func()
	// followerReclaim, when set, replaces followerReclaimEvery (tests).
	followerReclaim time.Duration
	// reclaimHook, when set, runs before each of a follower's reclaims
	// (tests: a reclaim that takes long).
	reclaimHook func()
	// reconcileHook, when set, runs at each of the node's reconcile
	// passes, before it looks at the engine's tenure (tests: a pass that
	// is held).
	reconcileHook func()
	// persistHook, when set, runs as each snapshot's Persist begins
	// (tests: a snapshot held by a store that does not answer).
	persistHook func()
	// engineOpenHook, when set, runs in startTenure just before the
	// leader opens its engine (tests: an open held by a store that does
	// not answer).
	engineOpenHook func()
	// clientsPhaseHook, when set, is told how the close's consumer phase
	// ended (closeClientsFirst; tests).
	clientsPhaseHook func(clientsPhaseEnd)
	// tenureWatchHook, when set, is called once watchTenure found the
	// tenure live and waits for its end (tests).
	tenureWatchHook func()
	// noHello makes the node open its Raft connections without a hello,
	// as a version before hellos did (hello.go; tests).
	noHello bool
}

// minRaftTimeout is the shortest timeout Raft runs with.
const minRaftTimeout = 5 * time.Millisecond

func (o *Options) validate() error {
	if o == nil {
		return fmt.Errorf("%w: nil cluster options", equeue.ErrInvalidOptions)
	}
	if !validID(o.ID) {
		return fmt.Errorf("%w: node ID must be 1-255 bytes of UTF-8 without control characters", equeue.ErrInvalidOptions)
	}
	if o.RaftAddr == "" {
		return fmt.Errorf("%w: RaftAddr is required", equeue.ErrInvalidOptions)
	}
	// Checked here, before Open touches the disk: a refused Open leaves
	// no directory behind. Its form only: a host name is looked up when
	// the node listens on it or another node dials it.
	if !dialableAddr(o.RaftAddr, 0) {
		return fmt.Errorf("%w: RaftAddr %q must be HOST:PORT naming a host other nodes can dial", equeue.ErrInvalidOptions, o.RaftAddr)
	}
	if o.KeepDamaged < 0 {
		return fmt.Errorf("%w: negative KeepDamaged", equeue.ErrInvalidOptions)
	}
	switch o.LogStore {
	case "", LogStoreWAL, LogStoreBolt:
	default:
		return fmt.Errorf("%w: LogStore %q (want %q or %q)", equeue.ErrInvalidOptions, o.LogStore, LogStoreBolt, LogStoreWAL)
	}
	if len(o.ClientAddr) > 255 {
		return fmt.Errorf("%w: ClientAddr longer than 255 bytes", equeue.ErrInvalidOptions)
	}
	if len(o.KafkaAddr) > 255 {
		return fmt.Errorf("%w: KafkaAddr longer than 255 bytes", equeue.ErrInvalidOptions)
	}
	if o.Engine != nil {
		if o.Engine.Store != nil || o.Engine.InMemory || o.Engine.Badger != nil {
			return fmt.Errorf("%w: Engine.Store, Engine.InMemory and Engine.Badger must be unset; the node opens its store", equeue.ErrInvalidOptions)
		}
		if err := o.Engine.Validate(); err != nil {
			return err
		}
	}
	if o.Bootstrap && len(o.Peers) > 0 {
		self := false
		for _, p := range o.Peers {
			if p.ID == "" || p.RaftAddr == "" {
				return fmt.Errorf("%w: a peer needs an ID and a RaftAddr", equeue.ErrInvalidOptions)
			}
			if !validID(p.ID) {
				return fmt.Errorf("%w: peer ID %.255q must be 1-255 bytes of UTF-8 without control characters", equeue.ErrInvalidOptions, p.ID)
			}
			if !dialableAddr(p.RaftAddr, 1) {
				return fmt.Errorf("%w: peer %q: RaftAddr %q must be HOST:PORT naming a host the nodes can dial", equeue.ErrInvalidOptions, p.ID, p.RaftAddr)
			}
			self = self || p.ID == o.ID
		}
		if !self {
			return fmt.Errorf("%w: Bootstrap needs Peers that include this node (%q)", equeue.ErrInvalidOptions, o.ID)
		}
	}
	for _, d := range []time.Duration{o.HeartbeatTimeout, o.ElectionTimeout, o.LeaderLeaseTimeout, o.ApplyTimeout, o.SnapshotInterval} {
		if d < 0 {
			return fmt.Errorf("%w: negative timeout", equeue.ErrInvalidOptions)
		}
	}
	// What Raft refuses to run with (raft.ValidateConfig), said as the
	// options' error.
	for _, d := range []time.Duration{o.HeartbeatTimeout, o.ElectionTimeout, o.LeaderLeaseTimeout, o.SnapshotInterval} {
		if d > 0 && d < minRaftTimeout {
			return fmt.Errorf("%w: a Raft timeout or interval below %v", equeue.ErrInvalidOptions, minRaftTimeout)
		}
	}
	if o.HeartbeatTimeout > 0 && o.ElectionTimeout > 0 && o.ElectionTimeout < o.HeartbeatTimeout {
		return fmt.Errorf("%w: ElectionTimeout %v below HeartbeatTimeout %v", equeue.ErrInvalidOptions, o.ElectionTimeout, o.HeartbeatTimeout)
	}
	return nil
}

// maxIDBytes bounds a node ID.
const maxIDBytes = 255

// validID reports whether id is a node ID Open takes: 1 to maxIDBytes
// bytes of UTF-8 without a control character. An ID is shown in logs,
// errors and `equeue cluster status`, where a newline or a terminal's
// escape sequence would forge or hide what is shown.
func validID(id string) bool {
	if id == "" || len(id) > maxIDBytes || !utf8.ValidString(id) {
		return false
	}
	return !strings.ContainsFunc(id, unicode.IsControl)
}

// dialableAddr reports whether addr is HOST:PORT with a host other nodes
// can dial: an IP address other than an unspecified one (0.0.0.0, ::), or
// a host name of ASCII letters, digits, '-', '_' and '.', and a numeric
// port from minPort to 65535. A host name is not looked up: it may not
// resolve yet when this node starts (a DNS record published once the node
// runs), or fail to for a moment, which says nothing of the options.
func dialableAddr(addr string, minPort int) bool {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || !dialableHost(host) {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= minPort && p <= 65535
}

// dialableHost reports whether host is an IP address other than an
// unspecified one, or has the form of a host name. A space, a control
// character or any other byte no resolver takes would only make every
// dial fail.
func dialableHost(host string) bool {
	if ip, err := netip.ParseAddr(host); err == nil {
		return !ip.Unmap().IsUnspecified()
	}
	if host == "" {
		return false
	}
	for _, c := range []byte(host) {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}
