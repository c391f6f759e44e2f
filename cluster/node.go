package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/closeonce"
	"github.com/equeue-go/equeue/store"
)

// Node is one member of a replicated cluster: a Badger store kept by the
// Raft FSM, a Raft log (raft-wal or raft-boltdb) and snapshot store, and — while it
// leads — an engine whose writes are Raft entries. It implements
// equeue.Broker, so producers and consumers (in-process, or remote through
// a remote.Server) use it as they use an engine; on a follower every call
// is refused with a *NotLeaderError that names the leader.
//
// A Node is safe for concurrent use. Close it when done.
type Node struct {
	opts  Options
	log   *slog.Logger
	st    *store.Badger
	logs  raftLogStore
	alog  *leaderLog // Raft's log: n.logs, written alongside replication while leading
	trans *raft.NetworkTransport
	// stream is trans's stream layer, which closes the connections peers
	// opened when the node closes (stream.go).
	stream *acceptedStream
	// authFailure, when the Raft stream is a secure one, returns an error
	// matching ErrPeerAuthFailed when the last handshake with a Raft
	// address, since a time, was refused (securedials.go).
	authFailure func(addr string, since time.Time) error
	// dialed wraps stream for trans: it closes the connections this node
	// opened to addresses its configuration no longer holds (dialed.go).
	dialed *dialedStream
	raft   *raft.Raft
	fsm    *fsm
	peers  map[string]string // node ID -> client address, from Options.Peers
	// noCleanMark, set by tests, makes Close leave the store as a crash
	// would: not marked clean (cleanstop.go).
	noCleanMark bool
	// handoffWarned is when reconcile last logged a failed hand-over of a
	// leader with a broken store (reconcile's goroutine only).
	handoffWarned time.Time
	// failure is why the node left Raft before Close: its log failed
	// (failStop).
	failure atomic.Pointer[error]
	obs     *raft.Observer
	// first reads the first index of Raft's log (under alog) for Status.
	first *firstIndexReader

	// ptrans is trans noting followers' progress (lag.go); Raft uses it.
	ptrans *progressTransport
	// lease says whether the leader may serve calls (lease.go).
	lease leaseState
	// removing holds a token while a RemoveServer checks and makes its
	// change, so that the next is checked against the configuration it
	// left.
	removing chan struct{}
	// membership tells whether the node was removed from the cluster
	// (Status.Removed).
	membership membership

	mu     sync.RWMutex
	engine *equeue.Engine
	rstore *replicatedStore
	// engines counts the times engine was set or cleared, under mu
	// (TopicsVersion).
	engines uint64
	// seq counts the tenures this node started in Raft term seqTerm (run
	// goroutine only): the low bits of its next tenure.
	seq     uint64
	seqTerm uint64

	kick    chan struct{}
	obsCh   chan raft.Observation
	closing chan struct{}
	// loopDone is closed once run, the reconcile loop, ended: the close
	// waits for it first, loopCloseGrace at most (shutdown), and the
	// stores close only after it (release).
	loopDone chan struct{}
	// storeUsers counts the node's own goroutines that use its stores off
	// Raft's (retryFullDisk, reclaimFollowing): a store that does not
	// answer holds them, so the close does not wait for them before it
	// shuts Raft down, only before it closes the stores (release).
	storeUsers sync.WaitGroup
	// gone is closed once Raft was shut down: a wait on a Raft future
	// ends there (raftGone).
	gone *raftGone

	tenures       atomic.Uint64 // engines opened as leader
	leaderChanges atomic.Uint64 // leader observations (elections seen)

	// closer runs shutdown once, started by the first Close or
	// CloseContext, and gives its result to each (close.go).
	closer *closeonce.Close
	// closeGivenUp ends once a CloseContext gave the node's close up
	// (giveUpClose): the node then waits no more for its engine's close
	// (closeEngine).
	closeGivenUp context.Context
	giveUpClose  context.CancelFunc
	// engineLeft is the error of the first engine's close the node gave up
	// (closeEngine), nil while it gave none up.
	engineLeft atomic.Pointer[error]
	// raftStop is Raft's shutdown, once started (stopRaft).
	raftStop raftStop
}

// Directory layout of a node.
const (
	engineDir = "engine"
	raftDir   = "raft"
	raftDB    = "raft.db"
)

// Log compaction defaults (see Options.SnapshotThreshold): lower than
// Raft's own (8192 and 10240), because an entry here is a whole writer batch.
const (
	defaultSnapshotThreshold = 4096
	defaultTrailingLogs      = 1024
)

// defaultApplyTimeout bounds the wait to queue a write into Raft.
const defaultApplyTimeout = 10 * time.Second

// reconcileEvery is how often the node checks, besides Raft's
// notifications, that it serves an engine exactly while it leads.
const reconcileEvery = 100 * time.Millisecond

// handoffWarnEvery is how often a leader with a broken store that cannot
// hand over its leadership (a single voter, say) logs so.
const handoffWarnEvery = 10 * time.Second

// followerReclaimEvery is how often a follower gives the space of deleted
// records back (the leader's engine does it with its retention passes).
const followerReclaimEvery = 10 * time.Minute

// Open opens (creating it when needed) the node kept in dir and starts its
// Raft member.
func Open(dir string, opts *Options) (n *Node, err error) {
	began := time.Now()
	// The node owns a caller's RaftStream: a failed Open closes it, as
	// Close would. Once the transport exists, closing it closes the stream.
	streamOwned := false
	defer func() {
		if err != nil && !streamOwned && opts != nil && opts.RaftStream != nil {
			_ = opts.RaftStream.Close()
		}
	}()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if dir == "" {
		return nil, fmt.Errorf("%w: a directory is required", equeue.ErrInvalidOptions)
	}
	o := *opts
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ApplyTimeout == 0 {
		o.ApplyTimeout = defaultApplyTimeout
	}
	n = &Node{opts: o, log: o.Logger, peers: map[string]string{},
		kick: make(chan struct{}, 1), removing: make(chan struct{}, 1), obsCh: make(chan raft.Observation, 16), closing: make(chan struct{}), loopDone: make(chan struct{}), gone: newRaftGone(),
		closer: closeonce.New()}
	n.closeGivenUp, n.giveUpClose = context.WithCancel(context.Background())
	for _, p := range o.Peers {
		n.peers[p.ID] = p.ClientAddr
	}
	var closers []io.Closer
	defer func() {
		if err != nil {
			for i := len(closers) - 1; i >= 0; i-- {
				_ = closers[i].Close()
			}
		}
	}()
	// The port first, where RaftAddr's host name is looked up: a busy
	// port or a name that does not resolve leaves no directory behind.
	stream := o.RaftStream
	if ss, ok := stream.(*secureStream); ok {
		// A secure stream logs the handshakes it refuses with the node's
		// logs (securerefusals.go), and tells AddVoter of a node that
		// refused the leader's (securedials.go).
		ss.setLogger(n.log)
		n.authFailure = ss.authFailure
	}
	if stream == nil {
		ts, err := listenTCP(o.RaftAddr)
		if err != nil {
			return nil, fmt.Errorf("cluster: raft transport on %s: %w", o.RaftAddr, err)
		}
		stream = ts
		closers = append(closers, ts)
	}
	bo := store.DefaultBadgerOptions()
	if o.Badger != nil {
		bo = *o.Badger
	}
	if bo.Logger == nil {
		bo.Logger = o.Logger
	}
	if bo.SegmentBytes == 0 {
		bo.SegmentBytes = NodeSegmentBytes
	}
	if n.st, err = openNodeStore(dir, &bo, o.KeepDamaged, n.log); err != nil {
		return nil, fmt.Errorf("cluster: open %s: %w", dir, err)
	}
	closers = append(closers, n.st)
	// After the store: it checks its options before it creates anything,
	// so options it refuses leave no directory behind.
	if err := os.MkdirAll(filepath.Join(dir, raftDir), 0o755); err != nil {
		return nil, fmt.Errorf("cluster: open %s: %w", dir, err)
	}
	if n.fsm, err = newFSM(n.st, n.log); err != nil {
		return nil, err
	}
	n.fsm.onTenure = func(fsmState) { n.wake() }
	if n.logs, err = openLogStore(filepath.Join(dir, raftDir), o.LogStore, o.walSegmentSize); err != nil {
		return nil, fmt.Errorf("cluster: open raft log: %w", err)
	}
	closers = append(closers, n.logs)
	rlogOut := o.RaftLog
	if rlogOut == nil {
		rlogOut = io.Discard
	}
	hlog := hclog.New(&hclog.LoggerOptions{Name: "raft", Output: rlogOut, Level: hclog.Info})
	snaps, err := raft.NewFileSnapshotStoreWithLogger(filepath.Join(dir, raftDir), 2, hlog)
	if err != nil {
		return nil, fmt.Errorf("cluster: open snapshots: %w", err)
	}
	conf := n.raftConfig(hlog)
	restarted, err := raft.HasExistingState(n.logs, n.logs, snaps)
	if err != nil {
		return nil, fmt.Errorf("cluster: read raft state: %w", err)
	}
	cutShort := false // a bootstrap to finish (bootstrapcut.go)
	if o.Bootstrap && restarted {
		if cutShort, err = bootstrapCutShort(n.logs, snaps); err != nil {
			return nil, fmt.Errorf("cluster: read raft state: %w", err)
		}
		restarted = !cutShort
	}
	if restarted {
		// A member that ran before may have answered a leader's call just
		// before it stopped; it must not vote for another node before
		// that leader's lease ran out (lease.go): it joins no sooner than
		// a heartbeat timeout after this Open began.
		time.Sleep(time.Until(began.Add(conf.HeartbeatTimeout)))
	}
	hello := newHelloStream(stream, n.fsm.clusterID, n.log)
	hello.noHello = o.noHello
	accepted := newAcceptedStream(hello)
	n.stream = accepted
	n.dialed = newDialedStream(accepted)
	n.trans = raft.NewNetworkTransportWithLogger(n.dialed, raftPoolSize, 10*time.Second, hlog)
	streamOwned = true
	// Not n.stream: a failed Open returns a nil n before the closers run.
	closers = append(closers, n.trans, closerFunc(func() error { accepted.closeAccepted(); return nil }))
	ptrans := newProgressTransport(n.trans)
	n.ptrans = ptrans
	closers = append(closers, closerFunc(func() error { ptrans.stopRelay(); return nil }))

	// A follower forgets its leader, and may vote for another node, no
	// sooner than a heartbeat timeout after its last contact; a tenth is
	// left for clocks that run at different rates (lease.go).
	n.lease.length = conf.HeartbeatTimeout * 9 / 10
	cache, err := raft.NewLogCache(512, n.logs)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	var under raft.LogStore = cache
	if o.logStoreHook != nil {
		under = o.logStoreHook(cache)
	}
	n.alog = newLeaderLog(under)
	n.first = &firstIndexReader{read: under.FirstIndex}
	closers = append(closers, closerFunc(n.alog.Close))
	n.fsm.awaitLog = n.alog.awaitStored
	n.fsm.getLog = cache.GetLog
	n.fsm.writeHook = o.fsmWriteHook
	n.fsm.persistHook = o.persistHook
	n.ptrans.clamp = n.alog.storedBound
	n.ptrans.relay.clusterID = func() string { return n.fsm.current().clusterID }
	n.ptrans.relay.log = n.log
	n.ptrans.relay.installed = func(index, term uint64) {
		if err := n.alog.snapshotInstalled(index, term); err != nil {
			n.log.Warn("raft log that disagrees with an installed snapshot not dropped; the leader's next snapshot tries again", "snapshot_index", index, "err", err)
		}
	}
	if o.Bootstrap && !restarted {
		var boot raft.LogStore = cache
		if o.bootstrapLogHook != nil {
			boot = o.bootstrapLogHook(cache)
		}
		var stable raft.StableStore = n.logs
		if cutShort {
			n.log.Warn("finishing a bootstrap cut short: the directory holds its term and not its configuration entry")
			stable = cutShortTerm{n.logs}
		}
		if err := raft.BootstrapCluster(conf, boot, stable, snaps, n.ptrans, n.bootConfig()); err != nil {
			return nil, fmt.Errorf("cluster: bootstrap: %w", err)
		}
	}
	if n.raft, err = raft.NewRaft(conf, n.fsm, n.alog, n.logs, snaps, n.ptrans); err != nil {
		return nil, fmt.Errorf("cluster: start raft: %w", err)
	}
	if o.Bootstrap && restarted {
		n.log.Info("Bootstrap and Peers ignored: the directory holds Raft state, and the configuration it stores stands",
			"configuration", describeConfiguration(n.raft.GetConfiguration()))
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		n.membership.seen(f.Configuration())
	}
	r := n.raft
	n.alog.setLeading(func() bool { return r.State() == raft.Leader })
	n.obs = raft.NewObserver(n.obsCh, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(n.obs)
	n.storeUsers.Add(2)
	go n.run()
	go n.retryFullDisk(cmp.Or(o.fullDiskRetry, fullDiskRetry))
	go n.reclaimFollowing(cmp.Or(o.followerReclaim, followerReclaimEvery))
	n.log.Info("cluster node open", "id", o.ID, "raft", n.RaftAddr(), "client", o.ClientAddr)
	return n, nil
}

// fullDiskRetry is how often a node whose store refused entries for a
// full disk tries them again while the cluster commits nothing new.
const fullDiskRetry = 5 * time.Second

// retryFullDisk replays, every interval, the entries this node's FSM was
// handed while its store refused them for a full disk (fsm.retry), so
// that a node of an idle cluster follows the log again once space is
// freed, not only at the next entry the cluster commits.
func (n *Node) retryFullDisk(every time.Duration) {
	defer n.storeUsers.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-n.closing:
			return
		case <-t.C:
			if n.opts.fullDiskRetryHook != nil {
				n.opts.fullDiskRetryHook()
			}
			n.fsm.retry()
		}
	}
}

func (n *Node) raftConfig(hlog hclog.Logger) *raft.Config {
	c := raft.DefaultConfig()
	c.LocalID = raft.ServerID(n.opts.ID)
	c.Logger = hlog
	if n.opts.HeartbeatTimeout > 0 {
		c.HeartbeatTimeout = n.opts.HeartbeatTimeout
	}
	if n.opts.ElectionTimeout > 0 {
		c.ElectionTimeout = n.opts.ElectionTimeout
	}
	// Raft wants ElectionTimeout >= HeartbeatTimeout: the one left to its
	// default follows the one set.
	if c.ElectionTimeout < c.HeartbeatTimeout {
		if n.opts.ElectionTimeout > 0 {
			c.HeartbeatTimeout = c.ElectionTimeout
		} else {
			c.ElectionTimeout = c.HeartbeatTimeout
		}
	}
	if n.opts.LeaderLeaseTimeout > 0 {
		c.LeaderLeaseTimeout = n.opts.LeaderLeaseTimeout
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		c.LeaderLeaseTimeout = c.HeartbeatTimeout
	}
	c.SnapshotThreshold, c.TrailingLogs = defaultSnapshotThreshold, defaultTrailingLogs
	// The leader's writer hands Raft a group commit while earlier ones
	// replicate: a buffered apply channel takes it while the leader loop
	// fsyncs its log, and the loop dispatches all that are waiting at once.
	c.BatchApplyCh = true
	// A leader that removes itself keeps its Raft running until the node
	// closes: shutting down at once can drop committed entries on their
	// way to the FSM, whose futures (the writer's outstanding group
	// commits) would then never be answered. Without a vote it never
	// campaigns.
	c.ShutdownOnRemove = false
	if n.opts.SnapshotThreshold > 0 {
		c.SnapshotThreshold = n.opts.SnapshotThreshold
	}
	if n.opts.TrailingLogs > 0 {
		c.TrailingLogs = n.opts.TrailingLogs
	}
	if n.opts.SnapshotInterval > 0 {
		c.SnapshotInterval = n.opts.SnapshotInterval
	}
	return c
}

func (n *Node) bootConfig() raft.Configuration {
	if len(n.opts.Peers) == 0 {
		return raft.Configuration{Servers: []raft.Server{{ID: raft.ServerID(n.opts.ID), Address: n.trans.LocalAddr()}}}
	}
	var c raft.Configuration
	for _, p := range n.opts.Peers {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
	}
	return c
}

// describeConfiguration lists f's servers for a log, "ID=ADDRESS" joined
// by commas, a non-voter's marked so.
func describeConfiguration(f raft.ConfigurationFuture) string {
	if err := f.Error(); err != nil {
		return "unknown: " + err.Error()
	}
	var b strings.Builder
	for i, s := range f.Configuration().Servers {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%s", s.ID, s.Address)
		if s.Suffrage != raft.Voter {
			b.WriteString(" (non-voter)")
		}
	}
	return b.String()
}

// ID returns the node's ID.
func (n *Node) ID() string { return n.opts.ID }

// RaftAddr returns the address the node's Raft transport listens on.
func (n *Node) RaftAddr() string { return string(n.trans.LocalAddr()) }

// ClientAddr returns the client address the node was opened with.
func (n *Node) ClientAddr() string { return n.opts.ClientAddr }

func (n *Node) wake() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// run keeps the node serving an engine exactly while it leads.
func (n *Node) run() {
	defer close(n.loopDone)
	t := time.NewTicker(reconcileEvery)
	defer t.Stop()
	pruned := time.Now()
	for {
		select {
		case <-n.closing:
			return
		case <-n.kick:
		case o := <-n.obsCh:
			if _, ok := o.Data.(raft.LeaderObservation); ok {
				n.leaderChanges.Add(1)
			}
		case <-t.C:
		}
		n.reconcile()
		n.noteMembership()
		if time.Since(pruned) >= followerPruneEvery {
			pruned = time.Now()
			n.pruneFollowers()
		}
	}
}

// reclaimFollowing gives the space of deleted records back, every
// interval, while the node follows. It runs on its own goroutine, not
// run's: a reclaim of a large store takes seconds to minutes, and a node
// elected meanwhile must open its engine at once (the store serializes a
// reclaim with the one its engine's retention passes start).
func (n *Node) reclaimFollowing(every time.Duration) {
	defer n.storeUsers.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	// Close waits for this goroutine: a reclaim running stops after its
	// step in progress rather than after every round left.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		select {
		case <-n.closing:
			return
		case <-t.C:
		}
		n.mu.RLock()
		open := n.engine != nil // an ended tenure's engine may still reclaim
		n.mu.RUnlock()
		if open {
			continue
		}
		if n.opts.reclaimHook != nil {
			n.opts.reclaimHook()
		}
		if err := n.st.ReclaimContext(ctx); err != nil && !errors.Is(err, context.Canceled) {
			n.log.Warn("reclaim", "err", err)
		}
	}
}

// reconcile closes an engine whose tenure ended and opens one when the
// node leads without one.
//
// It waits in the engine's close (stopEngine), and nothing else reconciles
// meanwhile: an engine whose store does not answer (a hung disk) holds the
// reconcile loop until the store answers or the node closes. The loop
// gives the engine's close up engineCloseBound after the node's close
// began, or engineCloseGrace after a CloseContext gave the close up, and
// ends, so that the node's close goes on; a loop held elsewhere (an
// engine's open) is waited for loopCloseGrace at most (shutdown).
func (n *Node) reconcile() {
	if err := n.alog.failed(); err != nil {
		n.failStop(err)
		return
	}
	leader := n.raft.State() == raft.Leader
	n.mu.RLock()
	e, rs := n.engine, n.rstore
	n.mu.RUnlock()
	if n.opts.reconcileHook != nil {
		n.opts.reconcileHook()
	}
	// A term change ends the tenure even when this node leads again: it may
	// have missed another leader's writes in between.
	if e != nil && (!leader || rs.isFenced() || n.fsm.err() != nil || n.fsm.current().tenure != rs.tenure || n.raft.CurrentTerm() != rs.term) {
		n.stopEngine(true)
		e = nil
	}
	if leader && e == nil && n.fsm.err() != nil {
		// This node's copy no longer follows the log (a store failure), so
		// it can never serve: hand the leadership to a node that can,
		// rather than keep the cluster leading without an engine.
		n.handOver("leader with a broken store could not hand over leadership; retrying")
		return
	}
	if leader && e == nil && n.fsm.err() == nil {
		err := n.startTenure()
		switch {
		case errors.Is(err, errTenuresSpent):
			// No tenure of this term can rise above the last one: a node
			// elected in a later term can start one.
			n.handOver("leader that started every tenure its term allows could not hand over leadership; retrying")
		case errors.Is(err, errClosing):
			// Close stopped the wait for the tenure's entries.
		case err != nil:
			n.log.Warn("could not start serving as leader; retrying", "err", err)
		}
	}
}

// handOver asks Raft to hand this node's leadership to another voter,
// for a leader that cannot serve. A failed hand-over is logged with msg
// now and then: reconcile retries every reconcileEvery.
func (n *Node) handOver(msg string) {
	n.lease.transfers.Add(1) // as TransferLeadership: no lease meanwhile
	err := n.raft.LeadershipTransfer().Error()
	n.lease.transferEnded(time.Now())
	n.lease.transfers.Add(-1)
	if err != nil && time.Since(n.handoffWarned) >= handoffWarnEvery {
		n.handoffWarned = time.Now()
		n.log.Warn(msg, "err", err)
	}
}

// failStop takes a node whose Raft log failed a write out of the cluster
// until it is reopened. Such a log stores nothing more, and the entries of
// the failed write, which Raft believes stored, are in no file: staying in
// Raft, the node would still vote and stand for election with a log that
// looks longer than it is, win, fail its first write, step down and win
// again. So it stops serving and shuts Raft down, as a crash would; the
// others elect a leader among themselves, and a reopened node catches up
// from them. Status reports the failure. Reconcile's goroutine only.
func (n *Node) failStop(cause error) {
	if n.failure.Load() != nil {
		return
	}
	n.failure.Store(&cause)
	n.log.Error("raft log write failed: the node leaves the cluster until it is reopened", "err", cause)
	// Raft first: its shutdown fails the entries still on their way
	// (unknown outcome), which the engine's close then waits for. An FSM
	// held in its apply (a store that does not answer) holds the
	// shutdown: failStop waits for it raftShutdownGrace at most, or until
	// the node closes, and then goes on, so that the writes on their way
	// end (unknown) and the engine stops serving; the shutdown finishes
	// in the background once the FSM returns.
	s := n.stopRaft()
	t := time.NewTimer(raftShutdownGrace)
	select {
	case <-s.done:
		if s.err != nil {
			n.log.Warn("raft shutdown after a failed log write", "err", s.err)
		}
	case <-n.closing:
	case <-t.C:
		n.log.Error("raft shutdown after a failed log write held (the FSM's store does not answer): the node stops serving without waiting for it", "grace", raftShutdownGrace)
	}
	t.Stop()
	n.gone.close()
	// An entry Raft took into its apply buffer but never answered would
	// hold the engine's close for ever: its wait ends now, unknown.
	n.mu.Lock()
	rs := n.rstore
	n.mu.Unlock()
	if rs != nil {
		rs.raftDown()
	}
	n.stopEngine(true)
}

// maxTerm is the highest Raft term a tenure (and so a group epoch base)
// can be derived from.
const maxTerm = 1<<27 - 1

// maxTenuresPerTerm is how many tenures a node starts in one Raft term:
// a tenure's low 16 bits count them.
const maxTenuresPerTerm = 0xffff

// errTenuresSpent is startTenure's refusal once the node started
// maxTenuresPerTerm tenures in the current term (failed starts count).
var errTenuresSpent = errors.New("cluster: every tenure of this raft term was started")

// errClosing is the outcome of a wait for a Raft entry that Close
// stopped (await).
var errClosing = errors.New("cluster: the node is closing")

// await is f's outcome, or errClosing once the node closes first. Raft
// bounds only the wait to queue an entry (ApplyTimeout), not the wait for
// its commit: a leader whose followers answer its heartbeats but refuse
// its entries stays leader and commits nothing, and a wait for an entry
// of its would hold Close for ever. The goroutine waiting on f ends when
// Raft answers it, at the latest once Close shut Raft down (gone: an
// entry still in Raft's apply buffer then is never answered).
func (n *Node) await(f raft.Future) error {
	done := make(chan error, 1)
	go awaitFuture(f, n.gone, done)
	select {
	case err := <-done:
		return err
	case <-n.closing:
		select {
		case err := <-done:
			return err
		default:
			return errClosing
		}
	}
}

// startTenure commits a tenure entry — after which this node's store holds
// every entry committed before — and opens an engine on it.
//
// Tenures rise: the term in the high bits, and below it a count of the
// tenures this node started in that term, which does not wrap (group
// epochs are derived from the tenure). Past maxTenuresPerTerm it returns
// errTenuresSpent and starts nothing.
func (n *Node) startTenure() error {
	term := n.raft.CurrentTerm()
	if term > maxTerm {
		return fmt.Errorf("cluster: raft term %d too high for group epochs", term)
	}
	if term != n.seqTerm {
		n.seq, n.seqTerm = 0, term
	}
	if n.seq >= maxTenuresPerTerm {
		return fmt.Errorf("%w (term %d)", errTenuresSpent, term)
	}
	n.seq++
	tenure := term<<16 | n.seq
	// The tenure entry carries the cluster ID this node's store held when
	// it was proposed (none in a new cluster: an entry without one is
	// taken by every node).
	f := n.raft.ApplyLog(raft.Log{Data: encodeTenure(tenure, n.opts.ID, n.opts.ClientAddr, n.opts.KafkaAddr),
		Extensions: stampID(n.fsm.current().clusterID)}, n.opts.ApplyTimeout)
	if err := n.await(f); err != nil {
		return fmt.Errorf("cluster: start tenure: %w", err)
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return fmt.Errorf("cluster: start tenure: %w", err)
	}
	if n.fsm.current().tenure != tenure {
		return errors.New("cluster: another tenure started meanwhile")
	}
	// Every entry committed before the tenure's is applied now: a store
	// without a cluster ID is of a cluster that has none (new, or of a
	// version before IDs), and this node gives it one (clusterid.go).
	id := n.fsm.current().clusterID
	if id == "" {
		id = newClusterID()
		n.log.Info("new cluster ID", "cluster_id", showID(id))
	}
	// Every node's store must take the writes this node's engine makes
	// (up to its own store's limits): one that cannot stops here, loudly,
	// not at the first large write (fsm.checkLimits).
	f = n.raft.ApplyLog(raft.Log{Data: encodeLimits(tenure, n.st.Limits()), Extensions: stampID(id)}, n.opts.ApplyTimeout)
	if err := n.await(f); err != nil {
		return fmt.Errorf("cluster: start tenure: limits: %w", err)
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return fmt.Errorf("cluster: start tenure: limits: %w", err)
	}
	if got := n.fsm.current(); got.tenure != tenure || got.clusterID != id {
		return errors.New("cluster: another tenure started meanwhile")
	}
	cf := n.raft.GetConfiguration()
	if err := cf.Error(); err != nil {
		return fmt.Errorf("cluster: start tenure: configuration: %w", err)
	}
	n.lease.setVoters(cf.Configuration())
	n.ptrans.keepOnly(cf.Configuration())
	rs := newReplicatedStore(n.raft, n.st, term, tenure, id, n.opts.ApplyTimeout, n.wake)
	rs.admitHook = n.opts.admitHook
	rs.gone = n.gone
	var eo equeue.Options
	if n.opts.Engine != nil {
		eo = *n.opts.Engine
	}
	eo.Store = rs
	eo.Sync = equeue.SyncAlways // acknowledged on commit: every write waits for it
	// Group epochs rise across tenures: the tenure (term, then a counter)
	// in the high bits, 2^20 epochs per tenure below.
	eo.EpochBase = int64(tenure) << 20
	if eo.Logger == nil {
		eo.Logger = n.log
	}
	if n.opts.engineOpenHook != nil {
		n.opts.engineOpenHook()
	}
	e, err := equeue.Open("", &eo)
	if err != nil {
		rs.fence(err)
		return fmt.Errorf("cluster: open engine: %w", err)
	}
	n.mu.Lock()
	select {
	case <-n.closing:
		// The open outlasted the close's wait for this loop (a store that
		// did not answer): the close went on without this engine, and
		// nobody serves or closes it but this loop.
		n.mu.Unlock()
		rs.fence(errClosing)
		n.closeEngine(e, true, time.Time{})
		return errClosing
	default:
	}
	n.engine, n.rstore = e, rs
	n.engines++
	n.mu.Unlock()
	n.tenures.Add(1)
	n.onEngine(e, true) // the reconcile loop's goroutine only
	n.log.Info("serving as leader", "term", term, "tenure", tenure)
	return nil
}

// stopEngine ends the current tenure and closes its engine. The engine's
// close waits for the writes it has on their way, which a leader that
// commits nothing (its voters answer its heartbeats but refuse its
// entries) never answers: once the node closes, they are given up after
// closeDrain (giveUpWritesOnClose), whoever stops the engine — Close, or
// the reconcile loop, which Close waits for. An engine whose store does
// not answer holds its close, and the caller with it, until the store
// answers, the node's close went on engineCloseBound, or a CloseContext
// gave the node's close up (closeEngine). loop
// tells that the node's reconcile loop stops the engine, not Close: a
// panic in the engine's close, or in OnEngine, is then logged
// (closeEngine, onEngine). Close (loop unset) lets the engine close its
// in-process consumers and producers before the fence, within the same
// bound (closeClientsFirst), so that their final commits are stored; a
// tenure that ended (loop set) is fenced first, as its writes must be.
func (n *Node) stopEngine(loop bool) {
	n.mu.Lock()
	e, rs := n.engine, n.rstore
	n.engine, n.rstore = nil, nil
	if e != nil {
		n.engines++
	}
	n.mu.Unlock()
	if e == nil {
		return
	}
	n.onEngine(nil, loop)
	defer n.giveUpWritesOnClose(rs)()
	var began time.Time
	if !loop {
		// An orderly close, not a tenure that ended: the consumers'
		// final commits go through Raft before the fence, within the
		// bound of the engine's close.
		began = time.Now()
		n.closeClientsFirst(e, rs, began)
	}
	rs.fence(errFenced)
	n.closeEngine(e, loop, began)
	n.log.Info("stopped serving as leader")
}

// closeDrain bounds how long Close waits for committed entries to reach
// the store, and, before that, for the entries the engine's writes have
// on their way to be committed.
const closeDrain = 2 * time.Second

// drain waits (a little) until what Raft committed is applied to the
// store, so a clean close leaves the store complete. Raft drops what its
// FSM goroutine had not taken when it shuts down; nothing is lost (the log
// has it and a restart applies it), but the store would lag the log.
func (n *Node) drain() {
	if n.raft.State() == raft.Shutdown {
		return // failStop: Raft applies nothing more
	}
	if n.raft.State() == raft.Leader {
		// Barrier's timeout bounds only the wait to queue it: a leader
		// that commits nothing never answers it.
		done := make(chan error, 1)
		go awaitFuture(n.raft.Barrier(closeDrain), n.gone, done)
		t := time.NewTimer(closeDrain)
		select {
		case <-done:
		case <-t.C:
		}
		t.Stop()
	}
	deadline := time.Now().Add(closeDrain)
	for time.Now().Before(deadline) {
		st := n.raft.Stats()
		commit, _ := strconv.ParseUint(st["commit_index"], 10, 64)
		if st["fsm_pending"] == "0" && n.raft.AppliedIndex() >= commit {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// shutdown is the close of the node (see Close): it stops serving, shuts
// Raft down and closes the stores, and returns what failed. It runs once,
// started by the first Close or CloseContext; when it does not finish (a
// panic), every close call returns errCloseStopped.
//
// It waits for the reconcile loop loopCloseGrace at most: a loop held in
// its engine's open (startTenure), whose store does not answer, is left
// to end in the background; the engine it opens then is closed, never
// served, and the stores close only once the loop ended (release).
func (n *Node) shutdown() error {
	close(n.closing)
	loopHeld := !waitFor(n.loopDone, loopCloseGrace)
	if loopHeld {
		n.log.Error("the reconcile loop did not end (a store does not answer): the close goes on without it", "grace", loopCloseGrace)
	}
	n.stopEngine(false)
	n.drain()
	return n.release(loopHeld)
}

// loopCloseGrace is how long the node's close waits for its reconcile
// loop, from when the close began: past the bound of an engine's close
// the loop may be waiting in (engineCloseBound).
const loopCloseGrace = engineCloseBound + closeDrain

// errLoopHeld is the node's close's result when its reconcile loop did
// not end within loopCloseGrace: it goes on in the background, and the
// stores close once it ends.
var errLoopHeld = fmt.Errorf("%w: cluster: the reconcile loop did not return within %v (the leader's engine waits for a store that does not answer); it and the close of the stores go on in the background",
	equeue.ErrCloseAbandoned, loopCloseGrace)

// release shuts Raft down and closes the transports and the stores, once
// the node serves no more (shutdown), and returns what failed. When the
// node gave its engine's close up (closeEngine), the result says so and
// the store is not marked clean: the engine may still be at work on it,
// and the stores' close, which waits for that work, is waited for
// raftShutdownGrace at most (closeStoresWithin).
//
// Raft's shutdown waits for its FSM, which a store write that does not
// return holds, and so do the node's own goroutines that use the stores
// (storeUsers: the full-disk retry waits for the FSM's lock): release
// waits for them raftShutdownGrace at most, then closes the transport,
// its connections and listener all the same and returns an error
// matching equeue.ErrCloseAbandoned (errRaftShutdownHeld,
// errStoreUsersHeld), and the stores (Raft's log, the node's store) are
// closed in the background once all of them finished. The stores' close
// itself, which waits for the reads of the store still on their way, is
// waited for raftShutdownGrace at most too (closeStoresWithin).
func (n *Node) release(loopHeld bool) error {
	var errs []error
	if loopHeld {
		errs = append(errs, errLoopHeld)
	}
	left := n.engineLeft.Load()
	if left != nil {
		errs = append(errs, fmt.Errorf("cluster: engine: %w", *left))
	}
	s := n.stopRaft()
	idle := n.storesIdle(s)
	stopped := waitFor(idle, raftShutdownGrace)
	if stopped && loopHeld {
		// Raft is down and the node's store users ended, but the loop
		// may still use the store: the stores close once it ends.
		select {
		case <-n.loopDone:
		default:
			stopped = false
		}
	}
	switch {
	case !stopped && loopHeld && s.finished():
		// errLoopHeld says it.
	case !stopped && !s.finished():
		errs = append(errs, errRaftShutdownHeld)
	case !stopped:
		errs = append(errs, errStoreUsersHeld)
	case s.err != nil:
		errs = append(errs, fmt.Errorf("cluster: raft shutdown: %w", s.err))
	}
	n.gone.close()
	n.raft.DeregisterObserver(n.obs)
	n.ptrans.stopRelay()
	// Close the connections this node opened, so the peers' handlers
	// of them end too; Close alone leaves them open.
	n.trans.CloseStreams()
	if err := n.trans.Close(); err != nil {
		errs = append(errs, fmt.Errorf("cluster: raft transport: %w", err))
	}
	// And those the peers opened: a hung peer never closes its own.
	n.stream.closeAccepted()
	if !stopped {
		n.log.Error("raft shutdown or a goroutine using the stores held (a store does not answer): the stores close in the background once they finish", "grace", raftShutdownGrace, "raft_stopped", s.finished())
		go func() {
			<-idle
			<-n.loopDone
			if s.err != nil {
				n.log.Warn("raft shutdown", "err", s.err)
			}
			// The loop may have given an engine's close up meanwhile.
			if err := n.closeStores(n.engineLeft.Load() == nil); err != nil {
				n.log.Warn("close of the stores after a held raft shutdown", "err", err)
			}
		}()
		return errors.Join(errs...)
	}
	if left != nil {
		// The engine whose close was given up may still be at work on
		// the node's store (a read held by a disk that does not answer),
		// and the store's close waits for it: so does this close,
		// raftShutdownGrace at most.
		errs = append(errs, n.closeStoresWithin(false, raftShutdownGrace))
		return errors.Join(errs...)
	}
	// A read still held in the node's store (a hung disk) holds its
	// close even when nothing was given up: bounded alike.
	errs = append(errs, n.closeStoresWithin(true, raftShutdownGrace))
	return errors.Join(errs...)
}

// errStoresCloseHeld is the node's close's result when the close of the
// stores did not finish within raftShutdownGrace (a read of the store, by
// a given-up engine or anything else, does not return): it goes on in the
// background.
var errStoresCloseHeld = fmt.Errorf("%w: cluster: the close of the stores did not finish within %v (a read of the store does not return); it goes on in the background",
	equeue.ErrCloseAbandoned, raftShutdownGrace)

// closeStoresWithin closes the stores, marking the store clean first when
// clean is set, and waits for that close grace at most: past it, it
// returns errStoresCloseHeld, and the close goes on in the background,
// logging what failed.
func (n *Node) closeStoresWithin(clean bool, grace time.Duration) error {
	closed, late := make(chan error), make(chan struct{})
	go func() {
		err := n.closeStores(clean)
		select {
		case closed <- err:
		case <-late:
			if err != nil {
				n.log.Warn("close of the stores, given up by the node's close", "err", err)
			}
		}
	}()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-closed:
		return err
	case <-t.C:
		close(late)
		n.log.Error("the close of the stores held (a read of the store does not return): it goes on in the background", "grace", grace)
		return errStoresCloseHeld
	}
}

// closeStores closes Raft's log and the node's store, once Raft is shut
// down, marking the store clean first when clean is set.
func (n *Node) closeStores(clean bool) error {
	var errs []error
	if err := n.alog.Close(); err != nil {
		errs = append(errs, fmt.Errorf("cluster: raft log: %w", err))
	}
	if err := n.logs.Close(); err != nil {
		errs = append(errs, fmt.Errorf("cluster: raft log: %w", err))
	}
	if clean {
		n.markClean()
	}
	if err := n.st.Close(); err != nil {
		errs = append(errs, fmt.Errorf("cluster: store: %w", err))
	}
	return errors.Join(errs...)
}
