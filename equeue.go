package equeue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue/internal/closeonce"
	"github.com/equeue-go/equeue/store"
)

// Engine is an embedded queue engine on one store. It is the broker that
// Producers and Consumers talk to in-process. All methods are safe for
// concurrent use. Close it when done: Close waits as long as the store
// takes to answer, CloseContext as long as its context allows (a close it
// abandons goes on in the background; see ErrCloseAbandoned).
//
// Its methods fall in three groups. Applications call the first two:
//
//   - Life cycle and reading: Open, Close, CloseContext, Namespace, Pull,
//     Stats, QueueStats, StoreFailure, Delayed, ApplyRetention.
//   - Administration (most of it is remote.Admin, so tools can take an
//     Engine or a remote Client): CreateTopic, CreateTopicWith,
//     AddQueues, SetQueueWritable, SetTopicLimits, DeleteTopic, Topics,
//     TopicsVersion, DefaultQueues, MaxMessageSize, Topic, QueueInfo, Groups, Group, ResetOffsets, ListDeadLetters (DeadLetters),
//     Redrive, DeleteGroup; and, for a group coordinated outside the
//     engine (the Kafka listener's), GroupOffsets, CommitGroupOffsets,
//     KeepGroup and ClaimGroup.
//
// The third group is the Broker seam, which Producers, Consumers,
// PullConsumers and transports (package remote) call, and applications do
// not: Route, Append, AppendAsync, JoinGroup, Heartbeat, LeaveGroup,
// ReleaseQueues, CommitOffsets, FetchOffsets, SendBack, WaitAny,
// DeleteReplyTopic, PullStored and FastPathOwner. Each
// says so in its documentation. Send with a Producer and consume with a
// Consumer (or a PullConsumer) instead.
type Engine struct {
	opts Options
	st   Store
	log  *slog.Logger
	ids  *idSource

	mu     sync.RWMutex // guards topics and topicIDs
	topics map[string]*topic
	// topicIDs holds the same topics by their ID (topicByID: the delay
	// scheduler and Open's loads look a topic up by the ID records carry).
	topicIDs map[uint32]*topic
	// topicsVersion counts the topics created and deleted since Open
	// (TopicsVersion); it is raised under mu, with the change to topics.
	topicsVersion atomic.Uint64
	// lastTopic is the topic lookupTopic found last (topiclookup.go).
	lastTopic atomic.Pointer[topic]
	adminMu   sync.Mutex // serializes topic changes
	// viewIDs is the key Namespace views encipher topic IDs with
	// (namespace_topicid.go).
	viewIDs viewIDKey
	// redriving holds a value while a Redrive runs: they run one at a time.
	redriving chan struct{}

	// writeCh carries commands to the writer (writer.go). Close closes
	// writerStop; the writer drains writeCh and closes writerDone.
	writeCh    chan *command
	writerStop chan struct{}
	writerDone chan struct{}
	pipe       pipeline // written batches on their way to completion (writer_pipeline.go)
	// lingerWant counts the requests a lingering writer still waits for;
	// the sender that brings it to zero signals lingerWake.
	lingerWant atomic.Int32
	linger     atomic.Int64 // groupCommitLinger, in nanoseconds; tests change it
	lingerCap  atomic.Int64 // maxGroupCommitLinger, in nanoseconds; tests change it
	marksSweep atomic.Int64 // marksSweepEvery, in nanoseconds, when set (tests)
	yieldsOff  atomic.Int64 // senderYieldsOff, in nanoseconds; tests change it
	lingerWake chan struct{}
	limits     store.Limits
	// recordsChecked: the store's reads come out of segments whose own
	// checksum covers each record (recordsChecker), so a pull does not
	// check each record's again.
	recordsChecked bool
	// noSpaceLogged (unix nanoseconds) and noSpaceRefused pace the log
	// lines of writes refused for a full disk (writer_nospace.go).
	noSpaceLogged  atomic.Int64
	noSpaceRefused atomic.Int64
	// unsupportedLogged (unix nanoseconds) and unsupportedRefused pace the
	// log lines of pulls refused at a record of an unknown format version
	// (pull_unsupported.go).
	unsupportedLogged  atomic.Int64
	unsupportedRefused atomic.Int64
	// reclaimPending is set when a topic was deleted: the next retention
	// pass reclaims its space (retention.go).
	reclaimPending atomic.Bool
	// replyExpiryHook, set by tests, runs when the reply topic expiry has
	// found a topic idle, before it deletes it (replyexpiry.go).
	replyExpiryHook atomic.Pointer[func(name string)]
	// groupTopicsHook, set by tests, runs when DeleteGroup has deleted a
	// group's keys and memory, before it deletes its topics.
	groupTopicsHook atomic.Pointer[func(group string)]
	// redriveHook, set by tests, runs when a Redrive has checked its group
	// and is about to send a dead letter back (dlq.go).
	redriveHook atomic.Pointer[func(group string)]
	// redriveHeldHook, set by tests, runs when a Redrive's send holds off
	// the deletion of its group and its dead-letter topic (holdOffDeletion),
	// before it queues the dead letter's copy and mark (dlq.go).
	redriveHeldHook atomic.Pointer[func(group string)]
	// sendBackHeldHook, set by tests, runs when a SendBack holds the gates
	// that order it with the deletion of its group and of the group's
	// topics, before it queues its copy and mark (sendback.go).
	sendBackHeldHook atomic.Pointer[func(group string)]
	// heartbeatWokenHook, set by tests, runs when a heartbeat held without
	// the group's lock is woken (or its wait is over), before it reads the
	// answer it gives (groupanswer.go).
	heartbeatWokenHook atomic.Pointer[func(member string)]

	groups *coordinator
	marks  pullMarks // what each member pulled: the bound of SendBack (sendback.go)
	sched  *scheduler
	dedup  map[uint32]*dedupIndex // owned by the writer goroutine after Open
	// dedupSeq is the sequence the next dedup group is stored under
	// (dedup_group.go); the writer's, like dedup.
	dedupSeq uint64

	// clients are the in-process consumers, pull consumers and producers;
	// Close closes them first.
	clients clientSet

	// Lifecycle: enter/leave count calls in progress; Close waits for them.
	closed   atomic.Bool
	active   atomic.Int64
	drained  chan struct{}
	closing  chan struct{}
	bgCtx    context.Context // cancelled when Close starts
	bgCancel context.CancelFunc
	// closer runs the close (shutdown) once, started by the first Close
	// or CloseContext, and gives its result to each (closecontext.go).
	closer *closeonce.Close

	// storeFailed holds the fsync error that stopped writes (storefailure.go).
	storeFailed atomic.Pointer[error]
	// syncMu runs the engine's fsyncs one at a time (syncStore).
	syncMu   sync.Mutex
	bg       sync.WaitGroup // background goroutines
	writerWG sync.WaitGroup

	flushEvery atomic.Int64 // nanoseconds; 0 = no interval flusher
	flushKick  chan struct{}
	// trims are topics over their drop-oldest limit (topiclimits.go).
	trims chan *topic
	// trimmed are AppendAsync answers waiting for a trim (topiclimits.go).
	trimmed trimAnswers

	stats engineStats
	// lostRedriven holds the keys of the lost redriven marks already
	// counted, and of those a redrive wrote a sound mark over since
	// (noteLostRedriven).
	lostRedriven sync.Map
	// redrivenRewrites numbers the sound marks written over lost ones
	// (rewroteRedriven).
	redrivenRewrites atomic.Uint64
	// cutRedoHook, set by tests, runs in the redo of a consumer's cut
	// close (Consumer.closeForEngine) once the member's session was found
	// running, before the redo.
	cutRedoHook atomic.Pointer[func()]
	// redrivenRewriteHook, set by tests, runs when rewroteRedriven has
	// found the note of a lost mark, before it updates it.
	redrivenRewriteHook atomic.Pointer[func()]
	// redrivenForgets numbers the deletions of redriven marks whose notes
	// were dropped (forgetLostRedriven).
	redrivenForgets atomic.Uint64
}

type engineStats struct {
	corrupt atomic.Uint64
	expired atomic.Uint64
	noSpace atomic.Uint64 // writes refused with ErrNoSpace (writer_nospace.go)
	dedup   atomic.Int64  // IDs in the dedup windows' indexes (dedup_index.go)
	// dedupLost counts dedup groups Open found unreadable (dedup.go).
	dedupLost atomic.Uint64
	// unsupported counts pulls refused at a record of an unknown format
	// version (pull_unsupported.go).
	unsupported atomic.Uint64
	// hookPanics counts the hook panics that the engine's producers and
	// consumers recovered (hookpanics.go).
	hookPanics atomic.Uint64
	// deletedRetries counts the retry copies of deleted topics that
	// groups' pulls skipped (retryorigin.go).
	deletedRetries atomic.Uint64
}

// Open opens (creating if needed) an engine on dir. With Options.InMemory or
// Options.Store, dir must be empty. Opening a directory that another open
// engine holds returns an error matching ErrLocked.
func Open(dir string, opts *Options) (*Engine, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	var st Store
	switch {
	case o.Store != nil:
		if dir != "" {
			return nil, fmt.Errorf("%w: dir must be empty with Options.Store", ErrInvalidOptions)
		}
		st = o.Store
	case o.InMemory:
		if dir != "" {
			return nil, fmt.Errorf("%w: dir must be empty with InMemory", ErrInvalidOptions)
		}
		st = store.NewMemory()
	default:
		if dir == "" {
			return nil, fmt.Errorf("%w: a directory is required (or set InMemory)", ErrInvalidOptions)
		}
		bo := store.DefaultBadgerOptions()
		if o.Badger != nil {
			bo = *o.Badger
		}
		if bo.Logger == nil {
			bo.Logger = o.Logger
		}
		b, err := store.OpenBadger(dir, &bo)
		if err != nil {
			return nil, fmt.Errorf("equeue: open %s: %w", dir, err)
		}
		st = b
	}
	e := &Engine{
		opts:           o,
		st:             st,
		log:            o.Logger,
		ids:            newIDSource(),
		topics:         make(map[string]*topic),
		topicIDs:       make(map[uint32]*topic),
		writeCh:        make(chan *command, 1024),
		writerStop:     make(chan struct{}),
		writerDone:     make(chan struct{}),
		lingerWake:     make(chan struct{}, 1),
		limits:         st.Limits(),
		recordsChecked: checksRecords(st),
		drained:        make(chan struct{}, 1),
		closing:        make(chan struct{}),
		closer:         closeonce.New(),
		flushKick:      make(chan struct{}, 1),
		trims:          make(chan *topic, 64),
		redriving:      make(chan struct{}, 1),
	}
	e.linger.Store(int64(groupCommitLinger))
	e.lingerCap.Store(int64(maxGroupCommitLinger))
	e.yieldsOff.Store(int64(senderYieldsOff))
	e.bgCtx, e.bgCancel = context.WithCancel(context.Background())
	if err := e.loadTopics(); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("equeue: load topics: %w", err)
	}
	e.migrateRedrivenMarks()
	if err := e.loadDedup(); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("equeue: load dedup index: %w", err)
	}
	if err := e.openScheduler(); err != nil {
		_ = st.Close()
		return nil, err
	}
	e.groups = newCoordinator(e)
	if err := e.groups.load(); err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("equeue: load groups: %w", err)
	}
	e.raiseQueueEnds()
	e.writerWG.Add(1)
	go e.runWriter()
	if o.Sync.kind == syncInterval {
		e.requestFlushEvery(o.Sync.every)
	}
	e.goFunc(e.groups.run)
	e.goFunc(e.sched.run)
	e.goFunc(e.runRetention)
	if e.opts.GroupIdleTTL > 0 {
		e.goFunc(e.runGroupExpiry)
	}
	if e.opts.ReplyTopicIdleTTL > 0 {
		e.goFunc(e.runReplyExpiry)
	}
	e.goFunc(e.runTrims)
	e.trimAtOpen()
	e.log.Info("engine open", "dir", dir, "topics", len(e.topics), "sync", o.Sync.String())
	return e, nil
}

// goFunc runs f in a goroutine that Close waits for. f must return once
// e.closing is closed.
func (e *Engine) goFunc(f func()) {
	e.bg.Add(1)
	go func() {
		defer e.bg.Done()
		f()
	}()
}

// enter admits a call unless the engine is closed or ctx is done; every
// successful enter must be paired with leave.
func (e *Engine) enter(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	e.active.Add(1)
	if e.closed.Load() {
		e.leave()
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		e.leave()
		return err
	}
	return nil
}

func (e *Engine) leave() {
	if e.active.Add(-1) == 0 && e.closed.Load() {
		select {
		case e.drained <- struct{}{}:
		default:
		}
	}
}

// Close shuts the engine down in this order: it first closes every
// Consumer, PullConsumer and Producer opened on it in-process (consumers
// drain their handlers, commit and leave their groups; pull consumers
// leave theirs; producers finish their pending SendAsync calls), then stops background work, waits for calls in progress (long-poll
// pulls are woken and return ErrClosed), writes what was queued, syncs and
// closes the store. A consumer's final commit that could not be stored is
// among the errors returned, also that of a consumer its user was closing
// when Engine.Close came (Close waits for that close). A user's
// CloseContext whose own context ended before that consumer's final
// commit or leave were done (a pull consumer's leave) returned that to
// its user; Close does them again, within 10 s, and reports only what
// fails there. Close then
// stores the groups' starts kept in memory because the store had refused
// them (see ConsumerOptions.From), and reports a failure to. Closing those
// consumers and producers yourself first is fine. Idempotent: a later call returns the first one's result,
// once that close has finished. On a nil engine (as a failed Open returns)
// it does nothing and returns ErrInvalidArgument.
//
// Close waits as long as the store takes: on a disk that does not answer,
// for ever. CloseContext bounds that wait. A close that panicked (a Store
// of the program's own whose Sync or Close panics) is not finished: every
// later call returns an error matching ErrCloseUnfinished, never nil.
//
// After a failed fsync (see StoreFailure) Close returns an error matching
// ErrStoreFailed and wrapping that failure, even when the store's final
// Sync succeeds: the engine answered writes "outcome unknown" and refused
// the later ones, so the shutdown was not clean. A final Sync that stopped
// before its fsyncs (store.ErrSyncIncomplete) is tried again, as the
// engine's other Syncs are (3 times, 35 ms in all): Close reports it only when
// every retry failed too. A final Sync failing
// with the same failure (wrapping it, or its cause) is not reported again.
func (e *Engine) Close() error {
	return e.CloseContext(context.Background())
}

// shutdown is the close that Close and CloseContext start once (see
// Close), and returns its result. When it does not finish (a panic, in the
// store's Sync or Close say, which goes on to the caller), every close call
// returns errCloseStopped, so that none reports a clean close of a store
// that was neither synced nor closed.
func (e *Engine) shutdown() error {
	clientErr := e.closeClients()
	e.closed.Store(true)
	close(e.closing)
	e.bgCancel()
	for e.active.Load() > 0 {
		select {
		case <-e.drained:
		case <-time.After(5 * time.Millisecond):
		}
	}
	e.bg.Wait()
	close(e.writerStop)
	e.writerWG.Wait()
	errs := []error{clientErr}
	syncErr := e.finalSync() // retried while incomplete, as syncStore does
	failed := e.StoreFailure()
	if syncErr != nil && !errors.Is(syncErr, store.ErrClosed) && !repeatsFailure(syncErr, failed) {
		errs = append(errs, fmt.Errorf("equeue: final sync: %w", syncErr))
	}
	if failed != nil {
		// An earlier fsync failed: writes were answered "outcome unknown"
		// and refused since, whatever the final Sync says (a store of the
		// program's own may let a later one succeed; storefailure.go).
		// Reported once: a final Sync repeating it adds nothing.
		errs = append(errs, fmt.Errorf("equeue: close: %w", e.storeFailedErr()))
	}
	if err := e.st.Close(); err != nil {
		errs = append(errs, fmt.Errorf("equeue: close store: %w", err))
	}
	err := errors.Join(errs...)
	e.log.Info("engine closed", "err", err)
	return err
}

// requestFlushEvery starts (or speeds up) the background fsync for SyncInterval.
func (e *Engine) requestFlushEvery(d time.Duration) {
	for {
		cur := e.flushEvery.Load()
		if cur != 0 && cur <= int64(d) {
			return
		}
		if e.flushEvery.CompareAndSwap(cur, int64(d)) {
			if cur == 0 {
				e.goFunc(e.runFlusher)
			} else {
				select {
				case e.flushKick <- struct{}{}:
				default:
				}
			}
			return
		}
	}
}

func (e *Engine) runFlusher() {
	t := time.NewTimer(time.Duration(e.flushEvery.Load()))
	defer t.Stop()
	for {
		select {
		case <-e.closing:
			return
		case <-e.flushKick:
		case <-t.C:
			_ = e.syncStore() // a failure stops writes (storefailure.go)
		}
		t.Reset(time.Duration(e.flushEvery.Load()))
	}
}

// Stats are engine-wide counters since open.
type Stats struct {
	// CorruptRecords counts records skipped because they failed their
	// checksum: each once, by the first read that finds it (any read: a
	// group's pull, a browse, ListDeadLetters, a retention pass by age),
	// however many reads pass it afterwards. Each is logged when it is
	// counted; every read reports the ones it skipped in PullResult.Corrupt.
	// It also counts the offsets Open finds lost from the end of a queue:
	// below a group's committed offset (or a send-back mark) but past what
	// the store holds. Open logs them as one range and keeps them from
	// later sends; reads pass them without reporting them. And it counts
	// the delayed messages the scheduler skips, once each: a record the
	// store cannot read back, or a garbled entry of the delay index. And
	// the send-back and redriven marks found lost (unreadable or garbled),
	// once each: Open drops a lost send-back mark (its message may be
	// sent back again), and a lost redriven mark is taken as redriven.
	// And the dedup entries of the former format (a key per ID) that Open
	// finds lost, once each: dropped, their IDs no longer deduplicated.
	CorruptRecords uint64
	// ExpiredMessages counts messages skipped because their time-to-live
	// ran out: by a group's pull (PullRequest.Group set), once for each
	// group pull that skips one, and by an in-process consumer that drops
	// one it pulled alive. A message that two groups (or two members of a
	// broadcasting group) skip counts twice; one a group reads again after
	// a rebalance counts again, as a live one is delivered again. Reads
	// without a group (browses such as the console's and the CLI's,
	// ListDeadLetters and Redrive, the Kafka listener's fetches) report the
	// expired messages they skip in PullResult.Expired and do not count
	// them. Retry copies of a deleted topic are not counted here (see
	// DeletedTopicRetries).
	ExpiredMessages uint64
	// DeletedTopicRetries counts the retry copies a group's pull skipped
	// because their origin topic was deleted, or deleted and made again,
	// before they were due (retryorigin.go), as ExpiredMessages counts
	// expired messages: once for each group pull that skips one. Reads
	// without a group report them in PullResult.DeletedTopicRetries and do
	// not count them.
	DeletedTopicRetries uint64
	// StoreBytes is the size of the store.
	StoreBytes int64
	// NoSpaceRefusals counts store writes refused because the disk is
	// nearly full (ErrNoSpace): sends, commits and admin changes that
	// stored nothing.
	NoSpaceRefusals uint64
	// DedupIDs is the number of message IDs the dedup windows of topics
	// hold in memory (about 45 bytes each plus the ID's length).
	DedupIDs int64
	// LostDedupGroups counts the dedup groups Open found unreadable and
	// forgot: the message IDs one store write recorded for a topic, whose
	// bytes a machine crash took from Badger's value log (a group that
	// holds one long ID lives there). Their IDs are no longer
	// deduplicated; a send of one of them is stored again. Each is also
	// logged, with its topic.
	LostDedupGroups uint64
	// UnsupportedFormatPulls counts pulls refused with ErrUnsupportedFormat
	// because the record at their offset is of a format version this build
	// cannot read: one a newer engine wrote before this one opened its
	// directory. Consumers stop before such a record and retry, so a count
	// that grows means consumers are stalled: serve the directory with an
	// engine of that version again. Refusals are also logged, at most one
	// line per 10 s.
	UnsupportedFormatPulls uint64
	// ConsumerHookPanics counts the panics of hooks that the engine's
	// in-process producers and consumers recovered rather than passing
	// them on to a caller (see Hooks); despite its name, kept for
	// compatibility, consumers' are not the only ones. It counts a
	// consumer's hooks (BeforeHandle, AfterHandle, a trace's StartHandle
	// and its end), each also logged to ConsumerOptions.Logger, which is
	// silent by default; a SendAsync's AfterSend and trace end, each also
	// in its future's error; and a send's trace ends that panicked on the
	// caller's goroutine after another hook did, whose panic went on to
	// the caller. A count that grows means a hook is failing unseen. The
	// clients of a remote broker, or of a Broker that wraps the engine,
	// count theirs nowhere (the engine does not learn of them).
	ConsumerHookPanics uint64
	// ParkedDelayedMessages is how many due delayed messages are stuck
	// now: no write of the store can hold their move into their queue
	// (the engine was opened again on a store that takes smaller writes
	// than when they were sent). Each stays pending, listed by Delayed,
	// and is logged once; it is moved by an engine opened on a store that
	// takes it, or dropped with its topic (or its group, for a delayed
	// retry). A count above zero means messages wait for that reopen.
	ParkedDelayedMessages int64
}

// Stats returns engine-wide counters.
func (e *Engine) Stats() Stats {
	s := Stats{CorruptRecords: e.stats.corrupt.Load(), ExpiredMessages: e.stats.expired.Load(), DeletedTopicRetries: e.stats.deletedRetries.Load(), NoSpaceRefusals: e.stats.noSpace.Load(), DedupIDs: e.stats.dedup.Load(), LostDedupGroups: e.stats.dedupLost.Load(),
		UnsupportedFormatPulls: e.stats.unsupported.Load(), ConsumerHookPanics: e.stats.hookPanics.Load(),
		ParkedDelayedMessages: e.sched.parkedCount.Load()}
	if !e.closed.Load() {
		s.StoreBytes, _ = e.st.Size()
	}
	return s
}
