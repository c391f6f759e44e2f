package equeue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Handler processes one message. Returning nil acknowledges it; an error (or
// a panic, which is recovered) is a failed attempt: the message is delivered
// again later, or goes to the dead letters after MaxAttempts. ctx stays live
// while the consumer closes or hands a queue over, and is cancelled only
// when the handler is still running after ShutdownTimeout (on Close) or
// HandoffTimeout (on a handover); an error returned after that is a failed
// attempt like any other, but for ErrNotHandled, which says the handler
// never began on the message (orderly or concurrent).
type Handler func(ctx context.Context, m *Message) error

// ConsumerOptions configure a Consumer. Group, Subscriptions and Handler are
// required; every zero field means the documented default.
type ConsumerOptions struct {
	// Group is the consumer group name.
	Group string
	// ID identifies this member: 1 to 255 bytes without a NUL byte (Start
	// refuses others with ErrInvalidArgument). Default: host-pid-random.
	// Broadcasting members need a stable ID to resume from their own
	// offsets after a restart.
	ID string
	// Model is Clustering (default) or Broadcasting.
	Model MessageModel
	// Subscriptions are the topics and tag expressions to consume: at most
	// MaxSubscriptions, one fewer for a clustering consumer that is not
	// Orderly (its join also subscribes the group's retry topic).
	// NewConsumer refuses more with ErrInvalidOptions.
	Subscriptions []Subscription
	// Handler processes each message. Exactly one of Handler and
	// BatchHandler is required.
	Handler Handler
	// BatchHandler processes up to BatchSize messages of one queue per call
	// instead of Handler (see BatchHandler and BatchError).
	BatchHandler BatchHandler
	// BatchSize is the most messages per BatchHandler call, 1 to
	// MaxPullBatch. Zero means 32. Ignored without BatchHandler.
	BatchSize int
	// Orderly handles one message at a time per queue, in offset order; a
	// failure retries the same message in place. Default false: concurrent.
	Orderly bool
	// Concurrency is the most handler goroutines in concurrent mode; they
	// start when messages arrive and end when idle. Zero means 16.
	Concurrency int
	// PullBatch is the most messages per pull. Zero means the lesser of
	// 128 (DefaultConsumerPullBatch) and MaxCachedMessages, or, with a
	// BatchHandler, BatchSize when that is larger.
	PullBatch int
	// PullWait is the long-poll wait at the end of a queue. Zero means 15 s.
	PullWait time.Duration
	// MaxCachedMessages pauses pulling a queue while more messages are
	// pulled but unfinished. Zero means 1,000.
	MaxCachedMessages int
	// MaxCachedBytes pauses pulling a queue while more body bytes are cached. Zero means 100 MiB.
	MaxCachedBytes int64
	// MaxSpan pauses pulling a queue (concurrent mode) while the lowest and
	// highest unfinished offsets are further apart. Zero means 2,000.
	MaxSpan int64
	// CommitInterval is how often offsets are committed; they are also
	// committed when a queue is handed over and on Close. Zero means 5 s.
	CommitInterval time.Duration
	// HandoffTimeout bounds how long a handed-over queue waits for its
	// running handlers before it commits and is released. Zero means 30 s.
	HandoffTimeout time.Duration
	// ShutdownTimeout bounds how long Close lets running handlers finish
	// with a live context; it then cancels their context and waits up to
	// ShutdownTimeout more for them to return. Zero means 30 s.
	ShutdownTimeout time.Duration
	// HeartbeatInterval is the longest gap between heartbeats; it must stay
	// well under the engine's session timeout. An orderly clustering
	// consumer begins no new message once its lease passed since it sent
	// the last heartbeat that got through (its membership may have
	// expired meanwhile): two intervals, and at most half the session
	// timeout its engine tells (Assignment.SessionTimeout); it heartbeats
	// every quarter lease. An engine of an older version tells none: keep
	// its SessionTimeout at least three intervals. Zero means 3 s.
	HeartbeatInterval time.Duration
	// From says where a new group starts in queues it has no offset for:
	// ConsumeFromEarliest (the default, also for the zero value
	// ConsumeFromDefault), ConsumeFromLatest, or ConsumeFromTimestamp with
	// FromTime. A group keeps the setting it was created with.
	From ConsumeFrom
	// FromTime is the start time when From is ConsumeFromTimestamp: the
	// group starts at the first message stored at or after it.
	FromTime time.Time
	// Strategy is the allocation strategy name ("average", "average-by-circle",
	// "consistent-hash"). Empty means "average".
	Strategy string
	// RetryTopicDelays are the waits before each redelivery of a failed
	// message in a clustering group, which goes through the group's retry
	// topic %RETRY%<group>: entry i is the wait after the (i+1)-th failed
	// attempt, and attempts beyond the list wait its last entry. Nil means
	// DefaultRetryDelays (10 s, 30 s, 1 m ... 2 h); a work queue that wants
	// a quick first retry sets its own, e.g. {time.Second, 5 * time.Second,
	// time.Minute}. A handler can choose one message's wait with RetryAfter.
	RetryTopicDelays []time.Duration
	// LocalRetryDelay is the pause before a failed message is handled again
	// by this consumer itself, without the retry topic: in orderly mode (in
	// place, so the queue's order holds), in broadcasting groups, and for a
	// dead letter that could not be stored. Zero means 1 s.
	LocalRetryDelay time.Duration
	// RetryDelays is the former name of RetryTopicDelays, used when
	// RetryTopicDelays is nil. Setting both to different values is an
	// ErrInvalidOptions.
	//
	// Deprecated: use RetryTopicDelays.
	RetryDelays []time.Duration
	// RetryDelay is the former name of LocalRetryDelay, used when
	// LocalRetryDelay is zero. Setting both to different values is an
	// ErrInvalidOptions.
	//
	// Deprecated: use LocalRetryDelay.
	RetryDelay time.Duration
	// SendBackRetryDelay is the pause before a local retry when storing a
	// failed message in the retry topic fails. Zero means 5 s.
	SendBackRetryDelay time.Duration
	// ConsumeTimeout is how long a handler may run before its message is
	// sent back for retry (clustering, concurrent mode), so one stuck
	// handler cannot pin the committed offset forever. Zero means 15 min.
	// It is checked every min(ConsumeTimeout/4, 1 s), timing a handler from
	// the first check that sees it running: never early, at most two checks
	// late.
	ConsumeTimeout time.Duration
	// MaxAttempts is how many times a message is handled before it goes to
	// the group's dead-letter topic. Zero means 16.
	MaxAttempts int
	// Hooks observe handling.
	Hooks []Hooks
	// Logger receives the consumer's logs. Nil means silent.
	Logger *slog.Logger
}

func (o *ConsumerOptions) validate() error {
	if err := ValidateName(o.Group); err != nil {
		return err
	}
	if o.Handler == nil && o.BatchHandler == nil {
		return fmt.Errorf("%w: nil handler", ErrInvalidOptions)
	}
	if err := o.validateBatch(); err != nil {
		return err
	}
	if len(o.Subscriptions) == 0 {
		return fmt.Errorf("%w: no subscriptions", ErrInvalidOptions)
	}
	if err := checkSubscriptionCount(len(o.Subscriptions), false); err != nil {
		return err
	}
	for _, s := range o.Subscriptions {
		if err := ValidateName(stripInternal(s.Topic)); err != nil {
			return err
		}
		if err := ValidateFilter(s.Filter); err != nil {
			return err
		}
	}
	if o.Model != Clustering && o.Model != Broadcasting {
		return fmt.Errorf("%w: unknown model %d", ErrInvalidOptions, o.Model)
	}
	if o.Concurrency < 0 || o.PullBatch < 0 || o.PullBatch > MaxPullBatch || o.PullWait < 0 ||
		o.MaxCachedMessages < 0 || o.MaxCachedBytes < 0 || o.MaxSpan < 0 || o.CommitInterval < 0 ||
		o.HandoffTimeout < 0 || o.ShutdownTimeout < 0 || o.HeartbeatInterval < 0 || o.RetryDelay < 0 || o.MaxAttempts < 0 ||
		o.SendBackRetryDelay < 0 || o.ConsumeTimeout < 0 || o.LocalRetryDelay < 0 ||
		slices.ContainsFunc(o.RetryDelays, func(d time.Duration) bool { return d < 0 }) ||
		slices.ContainsFunc(o.RetryTopicDelays, func(d time.Duration) bool { return d < 0 }) {
		return fmt.Errorf("%w: negative or out-of-range consumer option", ErrInvalidOptions)
	}
	if o.LocalRetryDelay != 0 && o.RetryDelay != 0 && o.LocalRetryDelay != o.RetryDelay {
		return fmt.Errorf("%w: LocalRetryDelay and its former name RetryDelay differ; set only LocalRetryDelay", ErrInvalidOptions)
	}
	if len(o.RetryTopicDelays) > 0 && len(o.RetryDelays) > 0 && !slices.Equal(o.RetryTopicDelays, o.RetryDelays) {
		return fmt.Errorf("%w: RetryTopicDelays and its former name RetryDelays differ; set only RetryTopicDelays", ErrInvalidOptions)
	}
	return nil
}

func (o *ConsumerOptions) setDefaults() {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Concurrency, 16)
	def(&o.BatchSize, DefaultPullBatch)
	def(&o.MaxCachedMessages, 1000)
	// A consumer told to cache few messages does not pull many more; a
	// batch handler's batches still fit one pull.
	pull := min(DefaultConsumerPullBatch, o.MaxCachedMessages)
	if o.BatchHandler != nil {
		pull = max(pull, o.BatchSize)
	}
	def(&o.PullBatch, pull)
	def(&o.MaxAttempts, 16)
	defD(&o.PullWait, DefaultMaxPullWait)
	defD(&o.CommitInterval, 5*time.Second)
	defD(&o.HandoffTimeout, 30*time.Second)
	defD(&o.ShutdownTimeout, 30*time.Second)
	defD(&o.HeartbeatInterval, 3*time.Second)
	// The new and the former option names hold the same value from here on,
	// so code reading either sees the setting the user made.
	defD(&o.LocalRetryDelay, o.RetryDelay)
	defD(&o.LocalRetryDelay, time.Second)
	o.RetryDelay = o.LocalRetryDelay
	defD(&o.SendBackRetryDelay, 5*time.Second)
	defD(&o.ConsumeTimeout, 15*time.Minute)
	if len(o.RetryTopicDelays) == 0 {
		o.RetryTopicDelays = o.RetryDelays
	}
	if len(o.RetryTopicDelays) == 0 {
		o.RetryTopicDelays = DefaultRetryDelays
	}
	o.RetryDelays = o.RetryTopicDelays
	if o.MaxCachedBytes == 0 {
		o.MaxCachedBytes = 100 << 20
	}
	if o.MaxSpan == 0 {
		o.MaxSpan = 2000
	}
	if o.ID == "" {
		host, _ := os.Hostname()
		var b [4]byte
		_, _ = rand.Read(b[:])
		o.ID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Consumer is a push-style member of a consumer group: it pulls its
// assigned queues under the hood and calls the handler. Create it with
// NewConsumer, Start it, and Close it to drain, commit and leave the group.
// Its methods are safe for concurrent use.
type Consumer struct {
	b       Broker
	o       ConsumerOptions
	log     *slog.Logger
	hooks   hookList
	filters map[string]string

	ctx    context.Context // cancelled by Close after draining
	cancel context.CancelFunc
	// hctx is the parent of every handler's context; Close cancels it once
	// every queue is drained (each runner cancels its own handlers' context
	// when its drain times out).
	hctx    context.Context
	hcancel context.CancelFunc
	live    liveCount      // every goroutine of the consumer, and its handler calls
	pool    *workerPool    // concurrent mode
	parking parking        // in-process runners parked at the end of their queues
	timers  consumerTimers // periodic commit and watchdog
	lanes   laneBoard      // priority lanes (priority.go)

	// commitMu orders the consumer's commits: each computes its offsets
	// under it, so a periodic commit still in flight cannot land after (and
	// undo) the final commit of a handover or Close.
	commitMu sync.Mutex

	mu        sync.Mutex
	started   bool
	closed    bool
	closeDone chan struct{} // closed when the first Close (or crash) returns
	closeErr  error         // the first Close's result, set before closeDone is closed
	// closeBound is the bound of the first Close's final commit and
	// leave, set with closed: a Start that joined while Close ran leaves
	// within it too.
	closeBound func() (context.Context, context.CancelFunc)
	// unfinished, set (before closeDone is closed) by a close whose bound
	// ended before its final commit or leave were done, does them again
	// within another bound: Engine.Close's, for a close of its user's.
	unfinished func(context.Context) error
	runners    map[QueueRef]*runner
	stopping   map[QueueRef]bool
	// fenced holds, in orderly mode, the done channels (runner.done) of
	// the runners abandoned after a fence (offset reset, re-grant, expiry),
	// by queue: the next runner of the queue waits for their running
	// handler, so the queue never has two handlers at once. Not the
	// runners: those, and the messages they cached, go once their handler
	// returns, whether or not the queue is ever granted again.
	fenced   map[QueueRef][]<-chan struct{}
	handoffs sync.WaitGroup // handOver goroutines
	// handoffCtx is the parent of each hand-over's commit and release:
	// Close cancels it once its own bound ends (see waitHandOvers).
	handoffCtx    context.Context
	handoffCancel context.CancelFunc
	// cutHandOvers holds the runners of hand-overs whose commit a close's
	// bound cut (see waitHandOvers): that close commits them with its own.
	cutHandOvers []*runner
	version      int64
	// named holds the grants the assignment applied last (or being
	// applied) names, granted or to release: a handover of one of them
	// under another grant that ends has ap, the membership loop's
	// applier, apply it again (see handOver).
	named      map[QueueRef]Grant
	ap         *applier
	loopStop   <-chan struct{} // closed when the loops must stop
	loopCtx    context.Context
	loopCancel context.CancelFunc
	crashed    atomic.Bool
	// incarnation is the consumer's token (see JoinRequest.Incarnation),
	// made by its first Start and kept by the Starts after a failed one;
	// replaced is set while another incarnation holds the member ID.
	incarnation string
	replaced    atomic.Bool
	// gate holds an orderly clustering consumer's queues while its
	// membership is in doubt (see memberGate).
	gate memberGate

	handled  atomic.Uint64
	failures atomic.Uint64
}

type task struct {
	r     *runner
	m     *Message
	batch []*Message // set instead of m for a BatchHandler
}

// NewConsumer returns a consumer on b; call Start to join the group. A nil
// b, or a nil pointer in it, is refused with ErrInvalidArgument.
func NewConsumer(b Broker, opts ConsumerOptions) (*Consumer, error) {
	if nilBroker(b) {
		return nil, fmt.Errorf("%w: nil broker", ErrInvalidArgument)
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if err := checkSubscriptionCount(len(opts.Subscriptions), opts.Model == Clustering && !opts.Orderly); err != nil {
		return nil, err
	}
	opts.setDefaults()
	c := &Consumer{
		b: b, o: opts, log: opts.Logger.With("group", opts.Group, "member", opts.ID), hooks: opts.Hooks,
		filters:   map[string]string{},
		runners:   map[QueueRef]*runner{},
		stopping:  map[QueueRef]bool{},
		closeDone: make(chan struct{}),
	}
	for _, s := range c.subscriptions() {
		c.filters[s.Topic] = s.Filter
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.hctx, c.hcancel = context.WithCancel(c.ctx)
	c.loopCtx, c.loopCancel = context.WithCancel(c.ctx)
	c.handoffCtx, c.handoffCancel = context.WithCancel(c.ctx)
	c.loopStop = c.loopCtx.Done()
	if !opts.Orderly {
		c.pool = newWorkerPool(&c.o)
	}
	if c.gated() {
		c.gate.lease = memberLease(c.o.HeartbeatInterval)
	}
	if e := trackerOf(b); e != nil {
		e.clients.addConsumer(c)
	}
	return c, nil
}

// ID returns the member ID.
func (c *Consumer) ID() string { return c.o.ID }

// joinRequest names the consumer's subscriptions; a clustering member also
// consumes its group's retry topic.
func (c *Consumer) joinRequest() *JoinRequest {
	return &JoinRequest{Group: c.o.Group, Member: c.o.ID, Model: c.o.Model, Subscriptions: c.subscriptions(),
		From: c.o.From, FromTime: c.o.FromTime, Strategy: c.o.Strategy, Incarnation: c.incarnation}
}

func (c *Consumer) subscriptions() []Subscription {
	subs := slices.Clone(c.o.Subscriptions)
	if c.o.Model == Clustering && !c.o.Orderly {
		subs = append(subs, Subscription{Topic: RetryTopic(c.o.Group), Filter: "*"})
	}
	return subs
}

// Start joins the group and returns once the queues granted at join time
// are being consumed (or ctx ended first: they then start in the
// background); a failed try to start them (their offsets could not be
// fetched or stored) is tried again with backoff meanwhile. Its heartbeats begin at once, so fetching those queues'
// offsets may outlast the session timeout without the member being
// expired. Consumption goes on in the background until Close.
// A failure that no try can mend until the engine is reopened ends the
// wait, also under a ctx that never ends: the engine or the broker's
// client closed (ErrClosed, also when the heartbeats find it closed),
// the engine's writes stopped by a failed fsync (ErrStoreFailed, see
// Engine.StoreFailure), or its store unusable (store.ErrUnusable). Start
// then closes the consumer, as Close does but with its final commit and
// its leave bounded by ctx (by 10 s when ctx has no deadline or ended),
// and returns an error wrapping that failure
// (joined with what the close could not do): the consumer cannot be
// started again; make a new one once the engine was reopened. That holds
// for an engine of this process (or a BrokerWrapper of one): on a broker
// of its own (remote, a cluster node), which is reopened under the
// consumer, only a bare ErrClosed (the client's or node's own close) ends
// the wait; a failed fsync or an unusable store there is tried again
// until the broker was restarted. Any other failure (ErrNoSpace, a broken
// connection) is tried again.
// Each Consumer is a new incarnation of the member ID: while another
// consumer with the same ID is live in the group, Start returns
// ErrMemberIDInUse (a restart after a crash succeeds once the crashed
// one's session expired). Start may be called again after it returned an
// error. A Start whose join failed so that the broker may have taken it,
// its answer lost (a remote broker's connection broke, or ctx ended),
// leaves the group before it returns, within ctx (within 10 s when ctx
// has no deadline or ended), so that such a join, landed or still on its
// way, leaves no member to hold the queues until its session expires;
// once that leave is answered, the next Start joins as a new
// incarnation. When it is not, the next Start is the same incarnation,
// so that the join whose answer was lost does not hold the member ID
// against it; should that leave have landed, its answer lost, the broker
// refuses that incarnation's join (ErrNotMember) and Start joins again
// at once as a new one; should the broker refuse that Start's join
// otherwise (ErrJoinRefused), it leaves all the same, as the member the
// lost join made may be there still. Until that leave returned, Start runs: a Start called
// meanwhile is refused as one called while Start runs, since it would
// join as the incarnation that leave removes. A Close that came while
// Start joined could not leave for the member the join made: Start leaves
// once its join returned, within the bound of that Close's own leave (10 s
// for Close, the context of CloseContext), and returns ErrClosed. It
// returns ErrClosed too for a Close that came while it waited for the
// join's grants to be applied (that Close leaves for it): they are not
// being consumed.
func (c *Consumer) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.started {
		c.mu.Unlock()
		return fmt.Errorf("%w: consumer already started", ErrInvalidArgument)
	}
	c.started = true
	// An incarnation carried over from a Start whose join may have landed
	// may be a member already (see joinMayHaveLanded).
	carried := c.incarnation != ""
	if !carried {
		c.incarnation = newIncarnation()
	}
	c.mu.Unlock()
	sent := time.Now()
	a, err := c.b.JoinGroup(ctx, c.joinRequest())
	if errors.Is(err, ErrNotMember) {
		// The broker took a leave of this incarnation (an earlier Start's
		// for a join whose answer was lost, its own answer lost too) and
		// refuses its joins for a session timeout: join as a new one.
		c.mu.Lock()
		retry := !c.closed // else Close left first, or reads the incarnation
		if retry {
			c.incarnation = newIncarnation()
			carried = false
		}
		c.mu.Unlock()
		if retry {
			a, err = c.b.JoinGroup(ctx, c.joinRequest())
		}
	}
	if err != nil {
		c.mu.Lock()
		if c.closed {
			c.started = false
			c.mu.Unlock()
			// Close came while joining and left first: the broker refused
			// the join of the incarnation that left (ErrNotMember).
			return fmt.Errorf("%w: consumer closed while starting: %w", ErrClosed, err)
		}
		c.mu.Unlock()
		// Still started while it leaves: a Start again now would join as
		// this incarnation, and this leave would remove its member.
		left := mayBeMember(err, carried) && leaveLostJoin(startLeaveBound(ctx), c.b, c.joinRequest(), c.log)
		c.mu.Lock()
		c.started = false
		if left && !c.closed { // else Close may be reading the incarnation
			c.incarnation = "" // the next Start joins as a new one
		}
		c.mu.Unlock()
		return err
	}
	c.mu.Lock()
	if c.closed {
		// Close came while joining and could not leave for this member:
		// leave now, or its queues would wait for its session to expire,
		// within the bound of that Close's own leave.
		bound := c.closeBound
		c.mu.Unlock()
		if bound == nil { // crashed
			bound = closeLeaveBound
		}
		lctx, cancel := bound()
		defer cancel()
		if err := leaveGroup(lctx, c.b, c.joinRequest()); notLeft(err) {
			c.log.Warn("leave after Close during Start", "err", err)
		}
		return ErrClosed
	}
	c.mu.Unlock()
	c.gate.confirm(sent, a.SessionTimeout)
	c.startTimers()
	// The join's grants are applied by the membership loop, which
	// heartbeats meanwhile: fetching their offsets may outlast the
	// session timeout. Start waits for the first apply that succeeded: a
	// failed one is tried again in the background.
	first := newFirstApply(untilApplied)
	first.inProcess = trackerOf(c.b) != nil
	c.mu.Lock()
	if c.closed { // Close may be waiting for the goroutines already
		c.mu.Unlock()
		return errClosedWhileStarting
	}
	c.goFunc(func() { c.membershipLoop(&a, first) })
	c.mu.Unlock()
	select {
	case <-first.done:
		if errors.Is(first.err, errClosedWhileStarting) {
			return first.err
		}
		if first.err != nil {
			return c.closeAfterFailedStart(ctx, first.err)
		}
	case <-ctx.Done():
		c.log.Warn("initial assignment still being applied", "err", ctx.Err())
	}
	return nil
}

// errClosedWhileStarting is Start's error when Close came after the join
// and before the join's grants were applied: they are not consumed.
var errClosedWhileStarting = fmt.Errorf("%w: consumer closed while starting", ErrClosed)

// closeAfterFailedStart closes a consumer whose join's grants cannot be
// applied (permanentApplyFailure: err) and returns Start's error. Its
// final commit (of nothing, unless a later apply started queues
// meanwhile) and its leave are bounded by Start's ctx (startLeaveBound:
// 10 s when it has no deadline or has ended).
func (c *Consumer) closeAfterFailedStart(ctx context.Context, err error) error {
	err = fmt.Errorf("equeue: start: the assignment cannot be applied: %w", err)
	cerr := c.close(startLeaveBound(ctx))
	return errors.Join(err, cerr)
}

func (c *Consumer) goFunc(f func()) {
	c.live.add(1, 0)
	go func() {
		defer c.live.add(-1, 0)
		f()
	}()
}

// membershipLoop heartbeats and applies assignment changes, first the
// join's (join); first is told once the first apply returned, or the
// loop ended before one did.
func (c *Consumer) membershipLoop(join *Assignment, first *firstApply) {
	defer func() {
		if c.loopCtx.Err() == nil {
			// The loop ended by itself: the broker is closed.
			first.report(fmt.Errorf("%w: the broker closed before the assignment was applied", ErrClosed))
			return
		}
		// Close (or a crash) ended it before an apply succeeded.
		first.report(errClosedWhileStarting)
	}()
	ap := newApplier(c.loopCtx, first.wrap(c.apply), c.log)
	c.mu.Lock()
	c.ap = ap
	c.mu.Unlock()
	runMembership(c.loopCtx, c.b, c.joinRequest(), c.heartbeatWait, c.log, c.knownVersion, join,
		ap, c.abandonAll, c.replaced.Store, c.gate.set)
}

// gated reports whether the consumer's queues wait on its membership
// (see memberGate): in an orderly clustering group.
func (c *Consumer) gated() bool {
	return c.o.Orderly && c.o.Model == Clustering
}

// heartbeatWait is how long a heartbeat long-polls: HeartbeatInterval, or
// a quarter of the membership's lease when it must be renewed in time
// (see memberGate.current): half an interval, or less under an engine
// session timeout shorter than four intervals.
func (c *Consumer) heartbeatWait() time.Duration {
	if c.gated() {
		return c.gate.current() / 4
	}
	return c.o.HeartbeatInterval
}

// knownVersion is the assignment version the consumer has applied.
func (c *Consumer) knownVersion() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// apply makes the running queues match an assignment: queues no longer
// granted are handed over (drain, commit, release), queues granted under a
// new epoch are restarted from the committed offset, new queues are started.
// The membership loop's applier calls it, one call at a time, beside the
// heartbeats (see applier).
func (c *Consumer) apply(ctx context.Context, a Assignment) error {
	c.mu.Lock()
	if c.closed || c.crashed.Load() {
		c.mu.Unlock()
		return nil
	}
	c.log.Debug("apply", "version", a.Version, "queues", a.Queues, "pending", a.Pending, "running", len(c.runners), "stopping", c.stopping)
	granted := make(map[QueueRef]Grant, len(a.Queues))
	for _, g := range a.Queues {
		granted[g.QueueRef] = g
	}
	c.named = make(map[QueueRef]Grant, len(a.Queues)+len(a.Revoking))
	for _, g := range a.Revoking {
		c.named[g.QueueRef] = g
	}
	maps.Copy(c.named, granted)
	var lanes map[laneKey][]*runner // revoked priority lanes, by queue
	for ref, r := range c.runners {
		g, ok := granted[ref]
		switch {
		case !ok:
			delete(c.runners, ref)
			c.stopping[ref] = true
			if r.lane != nil {
				if lanes == nil {
					lanes = map[laneKey][]*runner{}
				}
				lanes[r.lane.key] = append(lanes[r.lane.key], r)
				continue
			}
			c.startHandOver([]*runner{r})
		case g.Epoch != r.grant.Epoch:
			// Fenced (offset reset or re-grant): what it holds cannot be committed.
			delete(c.runners, ref)
			c.keepFenced(r)
			r.abandon()
		}
	}
	for _, rs := range lanes {
		c.startHandOver(rs)
	}
	c.pruneFenced()
	// Queues held without a runner (granted and revoked before this member
	// saw them): nothing was consumed, so release them at once.
	var idle []Grant
	for _, g := range a.Revoking {
		if _, running := c.runners[g.QueueRef]; !running && !c.stopping[g.QueueRef] {
			idle = append(idle, g)
		}
	}
	var fresh []Grant
	for ref, g := range granted {
		if _, running := c.runners[ref]; !running && !c.stopping[ref] {
			fresh = append(fresh, g)
		}
	}
	c.mu.Unlock()
	if len(idle) > 0 {
		if err := c.b.ReleaseQueues(ctx, c.o.Group, c.o.ID, idle); err != nil {
			return fmt.Errorf("release: %w", err)
		}
	}
	if len(fresh) > 0 {
		claimed := c.learnLanes(a.Priorities, fresh)
		offs, err := c.b.FetchOffsets(ctx, c.o.Group, c.o.ID, fresh)
		if err != nil {
			c.unclaimLanes(claimed) // no runner starts on them
			return fmt.Errorf("fetch offsets: %w", err)
		}
		c.mu.Lock()
		for i, g := range fresh {
			if c.closed || c.crashed.Load() {
				break
			}
			r := c.newRunner(g, offs[i])
			c.runners[g.QueueRef] = r
			c.goFunc(r.pullLoop)
		}
		c.mu.Unlock()
	}
	c.mu.Lock()
	c.version = a.Version
	c.mu.Unlock()
	return nil
}

// startHandOver hands rs over in the background (see handOver). c.mu must
// be held.
func (c *Consumer) startHandOver(rs []*runner) {
	c.handoffs.Add(1)
	c.goFunc(func() {
		defer c.handoffs.Done()
		c.handOver(rs)
	})
}

// handOver stops rs gracefully, commits and releases their queues. rs are
// one queue, or the priority lanes of one queue: those drain side by side
// and are released together, in one ReleaseQueues, so that the new owner
// gets every lane at once. Released one by one, a lane drained early would
// reach the new owner while this member still runs a higher lane, and the
// new owner, which does not hold that lane yet, would hand out lower-lane
// messages before the higher lane's backlog (see priority.go). The commit
// and the release wait up to 10 s for the broker, less when a Close
// waiting for the hand-over has a shorter bound (see waitHandOvers); a
// commit that bound cut is left to that Close (keepCutHandOver).
func (c *Consumer) handOver(rs []*runner) {
	var wg sync.WaitGroup
	for _, r := range rs[1:] {
		wg.Add(1)
		c.goFunc(func() {
			defer wg.Done()
			r.drain(c.o.HandoffTimeout)
		})
	}
	rs[0].drain(c.o.HandoffTimeout)
	wg.Wait()
	grants := make([]Grant, len(rs))
	for i, r := range rs {
		grants[i] = r.grant
	}
	if c.crashed.Load() {
		c.mu.Lock()
		for _, g := range grants {
			delete(c.stopping, g.QueueRef)
		}
		c.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(c.handoffCtx, closeLeaveTimeout)
	if err := c.commit(ctx, rs); err != nil {
		c.log.Warn("commit on handover", "queue", rs[0].grant.QueueRef, "err", err)
		if c.handoffCtx.Err() != nil {
			c.keepCutHandOver(rs)
		}
	}
	err := c.b.ReleaseQueues(ctx, c.o.Group, c.o.ID, grants)
	if err != nil && !errors.Is(err, ErrNotMember) {
		c.log.Warn("release", "queue", rs[0].grant.QueueRef, "err", err)
	}
	cancel()
	// An assignment applied while the queue was handed over saw it
	// stopping, and neither started it (granted back to this member) nor
	// released it (to release under a grant renewed meanwhile, by an
	// offset reset): it is applied again at once, not after a heartbeat
	// brings it again, when it names the queue under another grant than
	// the one released, or when the release failed (the member still
	// holds the queue). A release that gave up the very grant it names
	// makes the engine grant the queue anew or to another member: the
	// assignment that tells so comes with the next heartbeat's answer, at
	// once.
	kept := err != nil && !errors.Is(err, ErrNotMember)
	c.mu.Lock()
	back := false
	for _, g := range grants {
		delete(c.stopping, g.QueueRef)
		if now, ok := c.named[g.QueueRef]; ok && (kept || now.Epoch != g.Epoch) {
			back = true
		}
	}
	ap := c.ap
	c.mu.Unlock()
	if back && ap != nil {
		ap.again()
	}
}

// abandonAll stops every runner without committing (after fencing).
func (c *Consumer) abandonAll() {
	c.mu.Lock()
	rs := c.runners
	c.runners = map[QueueRef]*runner{}
	c.version = 0
	c.named = nil
	for _, r := range rs {
		c.keepFenced(r)
	}
	c.mu.Unlock()
	for _, r := range rs {
		r.abandon()
	}
}

// keepFenced remembers an abandoned orderly runner, by its done channel,
// until the queue's next runner starts or its handler returned. r may
// itself have been waiting for fenced runners of the queue: their
// handlers are waited for too. c.mu must be held.
func (c *Consumer) keepFenced(r *runner) {
	if !c.o.Orderly {
		return
	}
	if c.fenced == nil {
		c.fenced = map[QueueRef][]<-chan struct{}{}
	}
	ref := r.grant.QueueRef
	c.fenced[ref] = pending(append(append(c.fenced[ref], r.prev...), r.done))
}

// pruneFenced forgets the fenced runners whose handler returned, and the
// queues left with none: a queue whose next runner did not start (fetching
// its offsets failed) and that is no longer granted to this member (its
// topic deleted, the queue moved to another member) would otherwise be
// kept until Close. c.mu must be held.
func (c *Consumer) pruneFenced() {
	for ref, chs := range c.fenced {
		if chs = pending(chs); len(chs) > 0 {
			c.fenced[ref] = chs
		} else {
			delete(c.fenced, ref)
		}
	}
}

// pending returns the channels of chs not closed yet, in place.
func pending(chs []<-chan struct{}) []<-chan struct{} {
	return slices.DeleteFunc(chs, func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	})
}

// startTimers starts the periodic commit and, in concurrent clustering
// mode, the watchdog that sends back messages whose handlers are stuck.
// Between ticks they hold no goroutine (see timers.go).
func (c *Consumer) startTimers() {
	c.timers.every(c.o.CommitInterval, c.periodicCommit)
	if !c.o.Orderly && c.o.Model == Clustering {
		c.timers.every(c.watchdogEvery(), c.sendBackOverdue)
	}
}

// periodicCommit is the commit of the commit timer.
func (c *Consumer) periodicCommit() {
	if err := c.Commit(c.ctx); err != nil && !errors.Is(err, ErrClosed) {
		c.log.Warn("periodic commit", "err", err)
	}
}

// Commit commits the offsets of every queue the consumer runs now. A nil
// ctx gets ErrInvalidArgument, whether or not there is anything to commit.
func (c *Consumer) Commit(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	c.mu.Lock()
	rs := make([]*runner, 0, len(c.runners))
	for _, r := range c.runners {
		rs = append(rs, r)
	}
	c.mu.Unlock()
	return c.commit(ctx, rs)
}

func (c *Consumer) commit(ctx context.Context, rs []*runner) error {
	c.commitMu.Lock()
	defer c.commitMu.Unlock()
	if c.crashed.Load() {
		return nil
	}
	c.mu.Lock()
	inc := c.incarnation // the one that joined: Start changes it no more
	c.mu.Unlock()
	req := &CommitRequest{Group: c.o.Group, Member: c.o.ID, Incarnation: inc}
	var sent []*runner
	for _, r := range rs {
		if r.abandoned.Load() {
			continue
		}
		off, atts := r.pq.committableState()
		if off == r.committed.Load() && slices.Equal(atts, r.committedAtts) {
			continue
		}
		req.Offsets = append(req.Offsets, OffsetCommit{Grant: r.grant, Offset: off, Attempts: atts})
		sent = append(sent, r)
	}
	if len(req.Offsets) == 0 {
		return nil
	}
	err := c.b.CommitOffsets(ctx, req)
	if err == nil {
		for i, r := range sent {
			r.committed.Store(req.Offsets[i].Offset)
			r.committedAtts = req.Offsets[i].Attempts
		}
	}
	return err
}

// Close stops pulling and lets running handlers finish with a live context
// for up to ShutdownTimeout; it then cancels their context and waits up to
// ShutdownTimeout more. A handler that fails meanwhile is a counted attempt
// and its message goes to the retry or dead-letter topic as usual, so the
// final commit passes every handled message. Close then commits, leaves the
// group and stops every goroutine. Only a message whose send-back could not
// be stored, or whose handler outlived both waits, stays uncommitted: the
// group gets it again. Close does not wait for such a handler (one that
// ignores its cancelled context): its goroutine ends when it returns, and
// its result is ignored. The same holds for a handler still running of a
// queue fenced before Close (an offset reset, or the member's expiry),
// whose context was cancelled at the fence: Close waits for it as long,
// then returns without it, and nothing is committed for it. Close reports
// either kind of handler it left running with an error matching
// ErrHandlerAbandoned. The returned error also says what could not be
// stored (the final commit, or leaving the group); a queue whose grant was fenced meanwhile (an offset reset the
// consumer had not seen yet) is not committed, as the reset asks, and that
// is no error. Idempotent: a later call waits for the first to finish and
// returns nil. Engine.Close closes the consumers opened on it in-process
// first; it waits for a close its user began and returns that close's
// error among its own, but for a CloseContext whose own context ended
// before its final commit or leave were done (still running, or returned
// before Engine.Close began): Engine.Close does those
// again within its own bound and reports only what fails there (not the
// handlers that close abandoned: it reported them; and the commit done
// again passes the message of such a handler that returned success since).
// The final commit and the leave are bounded by 10 s
// together (a remote broker whose connection went silent may never answer
// them); CloseContext takes that bound from a context instead.
func (c *Consumer) Close() error {
	return c.close(closeLeaveBound)
}

// CloseContext is Close that waits for the final commit's and the leave's
// answers only until ctx ends, instead of up to 10 s; the handlers' drain
// is bounded by ShutdownTimeout as in Close. A hand-over still running
// (a queue moving to another member) has its commit and release ended
// with ctx too, instead of after its own 10 s. The consumer is closed
// whether they are answered or not: no goroutine of its own is left
// running but a handler that outlived its drain, as with Close. When ctx
// ends first, it returns an error matching ctx's error: the positions the
// commit did not store are handled again by the group, and the member
// stays in the group until the engine's session timeout expires it and
// hands its queues to the other members, or until the Close of the
// engine it was opened on in-process, which commits and leaves again
// while the member's session runs (past it, the engine may have expired
// the member: it does nothing then). With a ctx that never ends
// (context.Background) it waits for the answers as long as the broker
// takes. Idempotent, as Close: a later call of either waits for the first
// to finish and returns nil. A nil ctx returns ErrInvalidArgument and
// closes nothing.
func (c *Consumer) CloseContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	return c.close(func() (context.Context, context.CancelFunc) { return ctx, func() {} })
}

// closeForEngine is Close for Engine.Close: when the consumer is closing
// already (its user's Close or CloseContext), it waits for that close and
// returns its result instead of nil, so that the engine reports a final
// commit or leave that failed there too.
//
// A close of its user's whose own bound (CloseContext's context) ended
// before its final commit or leave were done returned that to its user;
// Engine.Close does them again within its own bound (10 s) and reports
// only what it could not do itself.
func (c *Consumer) closeForEngine() error {
	err := c.closeReporting(closeLeaveBound, true)
	c.mu.Lock()
	redo := c.unfinished
	c.unfinished = nil
	c.mu.Unlock()
	if redo == nil {
		return err
	}
	e := trackerOf(c.b)
	if e != nil {
		defer e.clients.removeConsumer(c) // kept for this redo alone
	}
	if sessionLapsed(c.gate.sessionEnds()) {
		return err // the member may be gone, its ID another's (closecut_keep.go)
	}
	runCutRedoHook(e)
	ctx, cancel := closeLeaveBound()
	defer cancel()
	return redo(ctx)
}

// closeLeaveBound is the bound of Close's final commit and leave.
func closeLeaveBound() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), closeLeaveTimeout)
}

// close closes the consumer; bound gives the context of its final commit
// and leave. A later call waits for the first and returns nil.
func (c *Consumer) close(bound func() (context.Context, context.CancelFunc)) error {
	return c.closeReporting(bound, false)
}

// closeReporting is close; a later call waits for the first and returns
// nil, or the first one's result when again is set.
func (c *Consumer) closeReporting(bound func() (context.Context, context.CancelFunc), again bool) (err error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		<-c.closeDone
		if again {
			return c.closeErr
		}
		return nil
	}
	c.closed = true
	c.closeBound = bound
	defer func() {
		c.closeErr = err
		close(c.closeDone)
	}()
	started := c.started
	rs := c.runners
	c.runners = map[QueueRef]*runner{}
	c.mu.Unlock()
	if e := trackerOf(c.b); e != nil {
		// A close cut with its final commit or leave undone stays known to
		// the engine, whose Close does them again (closeForEngine), even
		// when this close returned before that began.
		// Only while the member's session runs (closecut_keep.go).
		defer func() {
			c.mu.Lock()
			keep := c.unfinished != nil
			c.mu.Unlock()
			if !keep {
				e.clients.removeConsumer(c)
				return
			}
			keepCutUntil(c.gate.sessionEnds(), func() {
				c.mu.Lock()
				c.unfinished = nil
				c.mu.Unlock()
				e.clients.removeConsumer(c)
			})
		}()
	}
	if !started {
		c.cancel()
		return nil
	}
	c.loopCancel()
	c.timers.stop()
	var wg sync.WaitGroup
	// Handovers still running commit and release their queues before this
	// member leaves; leaving first would grant those queues to others while
	// their handlers still run.
	wg.Add(1)
	go func() {
		defer wg.Done()
		c.waitHandOvers(bound)
	}()
	for _, r := range rs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.drain(c.o.ShutdownTimeout)
		}()
	}
	var fencedRunning int
	wg.Add(1)
	go func() {
		defer wg.Done()
		fencedRunning = c.waitFencedHandlers()
	}()
	wg.Wait()
	c.hcancel()
	var errs []error
	ctx, cancel := bound()
	defer cancel()
	if !c.crashed.Load() {
		list := make([]*runner, 0, len(rs))
		for _, r := range rs {
			list = append(list, r)
		}
		abandoned := abandonedHandlers(list, fencedRunning) // before the commit: see there
		list = append(list, c.takeCutHandOvers()...)
		errs = c.finalCommitAndLeave(ctx, list)
		if len(errs) > 0 && ctx.Err() != nil && !again {
			// Cut by the caller's own bound: Engine.Close, when it closes
			// this consumer beside its user, does them again in its own,
			// and reports only what fails there: the handlers abandoned
			// are this close's report, made once. The commit again passes
			// a message whose abandoned handler returned success since.
			c.mu.Lock()
			c.unfinished = func(ctx context.Context) error {
				return errors.Join(c.finalCommitAndLeave(ctx, list)...)
			}
			c.mu.Unlock()
		}
		if abandoned != nil {
			errs = append(errs, abandoned)
		}
	}
	c.cancel()
	c.closeParking()
	// Not for a handler still running after its drain gave up, or after
	// waitFencedHandlers: it holds nothing to commit, and may never return.
	c.live.wait(true)
	if err := errors.Join(errs...); err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			// A broker's error for a call whose context ended need not
			// say so (a transport may report it unavailable).
			return fmt.Errorf("%w (%w)", err, cerr)
		}
		return err
	}
	return nil
}

// waitHandOvers is Close's wait for the hand-overs still running: their
// commit and release are bounded by 10 s each, and by bound (the close's
// own: CloseContext's context, a failed Start's), which ends them when it
// ends first.
func (c *Consumer) waitHandOvers(bound func() (context.Context, context.CancelFunc)) {
	ctx, cancel := bound()
	defer cancel()
	stop := context.AfterFunc(ctx, c.handoffCancel)
	defer stop()
	c.handoffs.Wait()
}

// finalCommitAndLeave is Close's final commit of list and its leave,
// under ctx; it returns what failed. Both may be done again (see
// closeForEngine): a commit of what is stored already sends nothing, and
// a leave of a member that left already is no failure (notLeft).
func (c *Consumer) finalCommitAndLeave(ctx context.Context, list []*runner) []error {
	var errs []error
	if err := withoutFenced(c.commit(ctx, list)); err != nil {
		errs = append(errs, fmt.Errorf("equeue: final commit: %w", err))
	}
	// A closed engine has no members left to leave; a replaced member
	// must not leave in the name of the incarnation that holds its ID.
	if !c.replaced.Load() {
		err := leaveGroup(ctx, c.b, c.joinRequest())
		if notLeft(err) {
			errs = append(errs, fmt.Errorf("equeue: leave group: %w", err))
		}
	}
	return errs
}

// waitFencedHandlers is Close's wait for the handlers still running of
// runners fenced before it (by an offset reset, or the member's expiry):
// their context is cancelled already, their results are ignored and
// nothing is committed for them. Close waits for them as long as a drain
// waits for its handlers, both of its waits (they run side by side), and
// then returns without them.
// It returns how many it left running.
func (c *Consumer) waitFencedHandlers() int {
	n := c.live.waitFenced(2 * c.o.ShutdownTimeout)
	if n > 0 {
		c.log.Warn("stop timeout: handlers of fenced queues still running; their results are ignored", "running", n)
	}
	return n
}

// withoutFenced drops from a commit's error the refusals of fenced grants
// (ErrFenced): the group moved those queues on under a new epoch, mostly by
// an offset reset (or the topic's deletion) that the membership loop had
// not applied yet when Close came. Had it, it would have abandoned their
// runners without committing (apply), so their positions are not to be
// stored, and the refusal is no failure of Close; nor is the refusal of a
// queue whose topic is gone (ErrTopicNotFound). Other errors stay.
//
// A wrapper of one error (a Namespace's, which maps the names in its
// text) is judged by the commit's error it wraps: it matches ErrFenced as
// soon as one queue was fenced, and dropping it whole would hide the
// queues whose positions were not stored. It is kept whole when they are.
func withoutFenced(err error) error {
	if err == nil {
		return nil
	}
	inner := err
	for {
		if _, ok := inner.(interface{ Unwrap() []error }); ok {
			break
		}
		u := errors.Unwrap(inner)
		if u == nil {
			break
		}
		inner = u
	}
	if j, ok := inner.(interface{ Unwrap() []error }); ok {
		var rest []error
		for _, e := range j.Unwrap() {
			// A deleted topic's refusal matches ErrFenced and
			// ErrTopicNotFound; through remote the two come apart (a
			// remote.Error unwraps to the sentinels it matches).
			if !errors.Is(e, ErrFenced) && !errors.Is(e, ErrTopicNotFound) {
				rest = append(rest, e)
			}
		}
		switch {
		case len(rest) == 0:
			return nil
		case inner != err:
			return err
		}
		return errors.Join(rest...)
	}
	if errors.Is(err, ErrFenced) {
		return nil
	}
	return err
}

// crash stops the consumer as a killed process would: nothing is committed,
// the group is not told, running handlers are abandoned.
func (c *Consumer) crash() {
	c.crashed.Store(true)
	c.mu.Lock()
	if !c.closed {
		defer close(c.closeDone)
	}
	c.closed = true
	rs := c.runners
	c.runners = map[QueueRef]*runner{}
	c.mu.Unlock()
	for _, r := range rs {
		r.abandon()
	}
	c.loopCancel()
	c.timers.stop()
	c.cancel()
	c.closeParking()
	c.live.wait(false)
	if e := trackerOf(c.b); e != nil {
		e.clients.removeConsumer(c)
	}
}

// QueueStat is the live state of one queue a consumer owns.
type QueueStat struct {
	QueueRef
	// Epoch is the group epoch the queue was granted in.
	Epoch int64
	// Cached counts pulled messages not finished yet.
	Cached int
	// CachedBytes is their body size.
	CachedBytes int64
	// Span is the distance between the lowest and highest unfinished offsets.
	Span int64
	// OldestInFlight is how long the lowest unfinished message has waited.
	OldestInFlight time.Duration
	// Committable is the offset a commit would store now.
	Committable int64
}

// Queues reports the queues the consumer owns and their process-queue state.
func (c *Consumer) Queues() []QueueStat {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]QueueStat, 0, len(c.runners))
	for ref, r := range c.runners {
		n, b, span, age := r.pq.stats()
		out = append(out, QueueStat{QueueRef: ref, Epoch: r.grant.Epoch, Cached: n, CachedBytes: b, Span: span, OldestInFlight: age, Committable: r.pq.committable()})
	}
	return out
}
