package equeue

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/equeue-go/equeue/store"
)

// Limits and defaults.
const (
	// MaxQueuesPerTopic is the most queues a topic can have.
	MaxQueuesPerTopic = 256
	// DefaultQueues is the queue count of a topic created without one.
	DefaultQueues = 4
	// DefaultMaxMessageSize is the default largest encoded message (4 MiB).
	DefaultMaxMessageSize = 4 << 20
	// DefaultPullBatch is the default number of messages a pull returns.
	DefaultPullBatch = 32
	// DefaultConsumerPullBatch is the default number of messages a
	// Consumer asks for in one pull (ConsumerOptions.PullBatch): a backlog
	// is read in fewer, larger reads, each one store seek.
	DefaultConsumerPullBatch = 128
	// MaxPullBatch is the most messages one pull may ask for.
	MaxPullBatch = 1024
	// DefaultMaxPullWait bounds how long a long-poll pull waits for data.
	DefaultMaxPullWait = 15 * time.Second
	// DefaultSessionTimeout is how long a silent group member stays a member.
	DefaultSessionTimeout = 30 * time.Second
)

type syncKind uint8

const (
	syncAlways syncKind = iota
	syncInterval
	syncNever
)

// SyncPolicy says when appended messages are made durable (fsync). The zero
// value is SyncAlways.
type SyncPolicy struct {
	kind  syncKind
	every time.Duration
}

var (
	// SyncAlways makes Send return only after its message is fsynced. Concurrent
	// sends share one fsync (group commit). A successful Send survives a crash
	// of the process or of the machine.
	SyncAlways = SyncPolicy{kind: syncAlways}
	// SyncNever never forces an fsync; the OS writes data back when it likes.
	// A successful Send survives a crash of the process, not of the machine.
	SyncNever = SyncPolicy{kind: syncNever}
)

// SyncInterval fsyncs every d in the background; Send returns once the
// message is written. A machine crash loses at most the last d of sends.
func SyncInterval(d time.Duration) SyncPolicy { return SyncPolicy{kind: syncInterval, every: d} }

// String names the policy.
func (p SyncPolicy) String() string {
	switch p.kind {
	case syncAlways:
		return "always"
	case syncNever:
		return "never"
	default:
		return "interval(" + p.every.String() + ")"
	}
}

func (p SyncPolicy) validate() error {
	if p.kind > syncNever {
		return fmt.Errorf("%w: unknown sync policy", ErrInvalidOptions)
	}
	if p.kind == syncInterval && p.every <= 0 {
		return fmt.Errorf("%w: SyncInterval needs a positive duration, got %v", ErrInvalidOptions, p.every)
	}
	return nil
}

// Options configure an Engine. A nil *Options, and every zero field, means the
// documented default.
type Options struct {
	// InMemory keeps everything in memory (store.Memory); nothing touches
	// disk and the dir argument of Open must be empty. Default false.
	InMemory bool
	// Store, when set, is used instead of opening one; the engine closes it on
	// Close. dir must then be empty. Used for custom backends and fault tests.
	Store Store
	// Badger tunes the Badger store; nil means store.DefaultBadgerOptions(),
	// an embedded profile that keeps an idle engine small.
	Badger *store.BadgerOptions
	// MemoryBudget, when positive, is the memory in bytes the engine's
	// Badger store and buffers are sized for together: memtables (B/16
	// each, 3 at most), table builders (base tables of 0.6 memtable on
	// every level), block cache (B/8), value-log files (B/4, 8 to 64 MiB)
	// and the engine's write batch (bounded by the store's limits, ~10% of
	// a memtable, so the largest SendBatch shrinks with the budget). The
	// pages of memory-mapped tables are given back to the OS every second
	// and as soon as they grow by B/8, and 20 s after the last write the
	// store returns the freed Go heap to the OS (debug.FreeOSMemory, a
	// collection of the whole process; Badger.KeepOSMemoryWhenIdle opts
	// out). store.BudgetShares lists the shares. Fields set in Badger
	// override the budget's. It is a sizing, not a hard limit: consumers'
	// caches (ConsumerOptions) are outside it. While writing, the Go heap
	// would run up to twice its live size between collections, so while
	// the engine is open and the process has no Go memory limit of its
	// own (GOMEMLIMIT, debug.SetMemoryLimit), the store sets a soft one:
	// the Go memory in use at Open plus 5/4 B, removed on Close
	// (Badger.GoMemoryLimit tunes it or opts out). Zero keeps the default
	// profile (store.DefaultBadgerOptions); below MinMemoryBudget (16 MiB),
	// above MaxMemoryBudget (1 TiB), or with InMemory or Store, Open
	// returns ErrInvalidOptions.
	MemoryBudget int64
	// Sync is the default durability policy. Zero value: SyncAlways.
	Sync SyncPolicy
	// DefaultQueues is the queue count of auto-created topics and of
	// CreateTopic with 0 queues. Zero means 4.
	DefaultQueues int
	// AutoCreateTopics creates unknown topics on first send instead of
	// returning ErrTopicNotFound. Default false.
	AutoCreateTopics bool
	// MaxMessageSize is the largest encoded message in bytes. Zero means 4 MiB.
	MaxMessageSize int
	// MaxPullWait caps how long a long-poll pull waits. Zero means 15 s.
	MaxPullWait time.Duration
	// SessionTimeout is how long a group member may go without a heartbeat
	// before it is expired and its queues reassigned. Zero means 30 s.
	SessionTimeout time.Duration
	// Retention says which old messages are deleted in the background.
	// The zero value keeps messages 72 hours.
	Retention RetentionPolicy
	// MaxDelay is how far in the future a message may be scheduled. Zero
	// means 7 days.
	MaxDelay time.Duration
	// Observer, when set, receives engine events for metrics (package
	// metrics provides a Prometheus one).
	Observer Observer
	// Logger receives the engine's structured logs. Nil means silent.
	Logger *slog.Logger
	// EpochBase is where group epochs and assignment versions start: every
	// epoch the engine grants is above it, and above every epoch an earlier
	// open of the same store granted (the engine stores a floor 2^32 above
	// where each open started, with the first group configuration it
	// writes), so a grant from before a reopen is fenced off after it. A
	// replicated cluster (package cluster) derives it from the Raft term,
	// so that epochs keep rising when another node's engine takes over.
	// Zero: epochs of a fresh store start at 1. A base within 2^33 of the
	// int64 limit is refused with ErrInvalidOptions.
	EpochBase int64
	// GroupIdleTTL, when positive, deletes a consumer group (as DeleteGroup
	// does) once it has had no live member for that long, checked on a
	// timer; in a broadcasting group it also deletes the offsets of a
	// member ID no live member has had for that long. Idle time counts
	// from Open for groups loaded from the store; a group coordinated
	// outside the engine (the Kafka listener's) is idle from its last
	// CommitGroupOffsets or KeepGroup, which its coordinator calls while
	// the group has members. Zero means groups and their members' offsets
	// are never deleted by age.
	GroupIdleTTL time.Duration
	// ReplyTopicIdleTTL deletes a reply topic (Producer.Request) nobody has
	// pulled for that long: the topic of a requester that died without
	// Producer.Close, which would otherwise stay for good. A live requester
	// always has a pull waiting, so it keeps its topic; one paused longer
	// than this gets a new reply topic with its next request. Zero means
	// DefaultReplyTopicIdleTTL; negative keeps reply topics until their
	// producer closes.
	ReplyTopicIdleTTL time.Duration
}

// Validate reports the first field that is out of range, wrapped in ErrInvalidOptions.
func (o *Options) Validate() error {
	if o == nil {
		return nil
	}
	if err := o.Sync.validate(); err != nil {
		return err
	}
	if err := o.validateBudget(); err != nil {
		return err
	}
	if o.DefaultQueues < 0 || o.DefaultQueues > MaxQueuesPerTopic {
		return fmt.Errorf("%w: DefaultQueues %d not in 0..%d", ErrInvalidOptions, o.DefaultQueues, MaxQueuesPerTopic)
	}
	if o.MaxMessageSize < 0 || o.MaxMessageSize > 256<<20 {
		return fmt.Errorf("%w: MaxMessageSize %d not in 0..256MiB", ErrInvalidOptions, o.MaxMessageSize)
	}
	if o.MaxDelay < 0 {
		return fmt.Errorf("%w: negative MaxDelay", ErrInvalidOptions)
	}
	if o.MaxPullWait < 0 {
		return fmt.Errorf("%w: negative MaxPullWait", ErrInvalidOptions)
	}
	if o.SessionTimeout < 0 || (o.SessionTimeout > 0 && o.SessionTimeout < 100*time.Millisecond) {
		return fmt.Errorf("%w: SessionTimeout %v must be 0 or at least 100ms", ErrInvalidOptions, o.SessionTimeout)
	}
	if o.EpochBase < 0 {
		return fmt.Errorf("%w: negative EpochBase", ErrInvalidOptions)
	}
	if o.EpochBase > maxEpochBase {
		return fmt.Errorf("%w: EpochBase %d above %d leaves too few group epochs below the int64 limit", ErrInvalidOptions, o.EpochBase, int64(maxEpochBase))
	}
	if o.InMemory && o.Store != nil {
		return fmt.Errorf("%w: InMemory and Store are exclusive", ErrInvalidOptions)
	}
	if o.GroupIdleTTL < 0 {
		return fmt.Errorf("%w: negative GroupIdleTTL", ErrInvalidOptions)
	}
	return nil
}

// withDefaults returns a copy with every zero field replaced by its default.
func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.DefaultQueues == 0 {
		c.DefaultQueues = DefaultQueues
	}
	if c.MaxMessageSize == 0 {
		c.MaxMessageSize = DefaultMaxMessageSize
	}
	if c.MaxPullWait == 0 {
		c.MaxPullWait = DefaultMaxPullWait
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = DefaultSessionTimeout
	}
	c.Retention = c.Retention.withDefaults()
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.ReplyTopicIdleTTL == 0 {
		c.ReplyTopicIdleTTL = DefaultReplyTopicIdleTTL
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.applyBudget()
	return c
}
