package equeue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// ProducerOptions configure a Producer. Nil means defaults.
type ProducerOptions struct {
	// Selector picks the queue; nil means KeyHashSelector (key hash, else round robin).
	Selector QueueSelector
	// Sync overrides the engine's sync policy for this producer's sends when non-nil.
	Sync *SyncPolicy
	// RouteTTL is how long a topic's queue list is cached. Zero means 1 s.
	// Expired ones are dropped as the producer looks up others, so it
	// keeps those of the topics it sends to, not of every topic it ever
	// sent to.
	RouteTTL time.Duration
	// Hooks observe every send.
	Hooks []Hooks
	// AsyncWindow bounds the SendAsync calls in flight on a broker without
	// an AppendAsync of its own (see OwnsFastPaths: a wrapper of the Engine
	// that overrides Append, a Broker with Append alone), each of which runs
	// as Send on a goroutine: while that many have not completed, SendAsync
	// waits (see SendAsync). Zero means DefaultAsyncWindow (1,024); negative
	// is refused with ErrInvalidOptions. On a broker with its own
	// AppendAsync (the Engine, a remote client) the broker's queue bounds
	// SendAsync instead, and AsyncWindow bounds only the goroutines that
	// retry, on a fresh route, the sends that met a stale one (a topic
	// whose queues changed under the producer's cached route), and the
	// queue of those waiting for them: while AsyncWindow wait, SendAsync
	// waits for room before it appends.
	AsyncWindow int
}

// SendResult says where a message was stored.
type SendResult struct {
	// ID is the message ID: the one the message carried, or a generated one.
	ID string
	// Topic is the topic the message was sent to.
	Topic string
	// Queue is the queue the message was stored in.
	Queue int
	// Offset is the message's offset; -1 for a delayed message, which gets
	// its offset when it becomes visible.
	Offset int64
	// StoredAt is when the engine stored the message.
	StoredAt time.Time
	// Delayed is set when the message was scheduled for later delivery.
	Delayed bool
	// Duplicate is set when the topic's dedup window already held this ID:
	// the result describes the original, and nothing was stored again. The
	// original's is the answer its send got: for a delayed one, Delayed and
	// Offset -1, also once it became due.
	Duplicate bool
}

func sendResult(topic string, ar AppendResult, i int) SendResult {
	off := ar.FirstOffset
	if off >= 0 {
		off += int64(i)
	}
	return SendResult{ID: ar.IDs[i], Topic: topic, Queue: ar.Queue, Offset: off, StoredAt: ar.StoredAt, Delayed: ar.Delayed, Duplicate: ar.Duplicate}
}

// BatchResult says where a batch was stored: one queue, consecutive offsets.
type BatchResult struct {
	// Topic is the topic the batch was sent to.
	Topic string
	// Queue is the one queue holding the whole batch.
	Queue int
	// FirstOffset is the first message's offset; message i is at
	// FirstOffset+i. -1 for a delayed batch, which gets its offsets when it
	// becomes visible.
	FirstOffset int64
	// StoredAt is when the engine stored the batch.
	StoredAt time.Time
	// IDs are the messages' IDs, in batch order.
	IDs []string
	// Delayed is set when the batch was scheduled for later delivery
	// (FirstOffset is then -1).
	Delayed bool
	// Duplicate is set when the topic's dedup window already held the
	// batch's IDs: nothing was stored again, and Queue, FirstOffset,
	// StoredAt and Delayed are the original send's (see Deduplication in
	// the README).
	Duplicate bool
}

// Producer sends messages to a broker: an *Engine in-process or a remote
// client. It is safe for concurrent use. Close it when done.
type Producer struct {
	b   Broker
	eng *Engine // b when it is an in-process *Engine: Send calls it directly
	// aa is b's AppendAsync when b owns it (OwnsFastPaths): SendAsync
	// appends through it without a goroutine per call.
	aa    asyncAppender
	sel   QueueSelector
	sync  *SyncPolicy
	ttl   time.Duration
	hooks hookList
	// hookPanics is the engine's count of the hook panics its clients
	// recovered (hookpanics.go); nil behind a remote broker.
	hookPanics *atomic.Uint64
	closed     atomic.Bool
	// async counts pending SendAsync calls, until their hooks returned;
	// pending counts them until the broker answered them (a Close from a
	// hook waits for that alone: producer_closeinside.go). asyncMu orders
	// their start with Close, so that none starts once Close waits for
	// them.
	asyncMu sync.RWMutex
	async   sync.WaitGroup
	pending sync.WaitGroup
	// closing is closed when Close begins: SendAsync calls waiting for a
	// slot of window then fail with ErrClosed.
	closing chan struct{}
	// window holds a slot per SendAsync running on a goroutine of its own,
	// on a broker without an AppendAsync of its own (aa nil;
	// producer_asyncwindow.go).
	window chan struct{}
	// retries retries the SendAsync calls whose append met a stale route,
	// on at most AsyncWindow goroutines (producer_routeretry.go).
	retries routeRetries
	// completions runs the hooks of completed SendAsync calls off the
	// goroutine that completed them (producer_completions.go).
	completions completions
	// pickers are the producer's goroutines picking a queue for a send
	// (producer_closeinside.go).
	pickers pickers

	routes sync.Map // topic -> *cachedRoute; read on every send, so lock-free
	// lastRoute is the route a send used last: most producers send to one
	// topic, which it serves without a lookup in routes.
	lastRoute atomic.Pointer[cachedRoute]
	// sweeper drops expired routes from routes now and then
	// (producer_routes.go).
	sweeper routeSweeper
	req     requesterState // request-reply (request.go)
}

type cachedRoute struct {
	topic string
	r     Route
	exp   time.Time
}

// NewProducer returns a producer on b. A nil b, or a nil pointer in it (an
// *Engine left nil by a failed Open), is refused with ErrInvalidArgument.
func NewProducer(b Broker, opts *ProducerOptions) (*Producer, error) {
	if nilBroker(b) {
		return nil, fmt.Errorf("%w: nil broker", ErrInvalidArgument)
	}
	var o ProducerOptions
	if opts != nil {
		o = *opts
	}
	if o.RouteTTL < 0 {
		return nil, fmt.Errorf("%w: negative RouteTTL", ErrInvalidOptions)
	}
	if o.AsyncWindow < 0 {
		return nil, fmt.Errorf("%w: negative AsyncWindow", ErrInvalidOptions)
	}
	if o.AsyncWindow == 0 {
		o.AsyncWindow = DefaultAsyncWindow
	}
	if o.Sync != nil {
		if err := o.Sync.validate(); err != nil {
			return nil, err
		}
	}
	if o.RouteTTL == 0 {
		o.RouteTTL = time.Second
	}
	if f, ok := o.Selector.(QueueSelectorFunc); ok && f == nil {
		return nil, fmt.Errorf("%w: nil QueueSelectorFunc", ErrInvalidOptions)
	}
	if o.Selector == nil {
		o.Selector = KeyHashSelector()
	}
	p := &Producer{b: b, eng: engineOf(b), sel: o.Selector, sync: o.Sync, ttl: o.RouteTTL, hooks: o.Hooks, closing: make(chan struct{})}
	p.retries.limit = o.AsyncWindow
	if aa, ok := b.(asyncAppender); ok && OwnsFastPaths(b) {
		p.aa = aa
	} else {
		p.window = make(chan struct{}, o.AsyncWindow)
	}
	if e := trackerOf(b); e != nil {
		e.clients.addProducer(p) // Engine.Close closes it first
		p.hookPanics = &e.stats.hookPanics
	}
	return p, nil
}

// Close stops the producer after its pending SendAsync calls complete; on
// a broker without an AppendAsync of its own, those still waiting for a
// slot of the producer's window (see ProducerOptions.AsyncWindow) fail at
// once with ErrClosed, not sent, and Close waits for the sends in flight.
// It fails waiting Requests with ErrClosed and deletes the reply topic.
// Idempotent.
//
// A send (Send, SendBatch, SendAsync) whose BeforeSend hooks, trace
// StartSend or QueueSelector are running when Close begins is not sent:
// it ends with ErrClosed, nothing stored, and its AfterSend hooks see
// that. Close does not wait for such a send: its hooks and selector run
// on the goroutine that called it, where it ends (a SendAsync's AfterSend
// hooks too, before SendAsync returns), except a selector asked again on
// a goroutine of the producer's, for a SendAsync retried on a fresh route,
// which a Close from outside waits for.
//
// Called from a send's hook or QueueSelector, Close returns without
// waiting for that send, nor for the hooks of the others: it waits until
// the broker answered every SendAsync in flight, whose AfterSend hooks
// then run one send after another once the calling hook returns (see
// Hooks). A Close from outside waits for every send that was past its
// BeforeSend hooks and first queue pick when Close began, and for that
// send's AfterSend hooks.
func (p *Producer) Close() error {
	p.asyncMu.Lock()
	if !p.closed.Swap(true) {
		close(p.closing)
	}
	p.asyncMu.Unlock()
	inside := p.closeFromInside()
	p.stopRequester()
	if inside {
		p.pending.Wait()
	} else {
		p.async.Wait()
	}
	if e := trackerOf(p.b); e != nil {
		e.clients.removeProducer(p)
	}
	return nil
}

// route returns topic's route as of now: the cached one unless it expired
// or fresh is set.
func (p *Producer) route(ctx context.Context, topic string, fresh bool, now time.Time) (Route, error) {
	if !fresh {
		if c := p.lastRoute.Load(); c != nil && c.topic == topic && now.Before(c.exp) {
			return c.r, nil
		}
		if v, ok := p.routes.Load(topic); ok {
			if c := v.(*cachedRoute); now.Before(c.exp) {
				p.lastRoute.Store(c)
				return c.r, nil
			}
		}
	}
	r, err := p.b.Route(ctx, topic)
	p.sweeper.looked(p, now)
	if err != nil {
		return Route{}, err
	}
	c := &cachedRoute{topic: topic, r: r, exp: now.Add(p.ttl)}
	p.routes.Store(topic, c)
	p.lastRoute.Store(c)
	return r, nil
}

// pick chooses a queue for m as of now, refreshing the route when fresh is
// set.
func (p *Producer) pick(ctx context.Context, m *Message, fresh bool, now time.Time) (int, error) {
	r, err := p.route(ctx, m.Topic, fresh, now)
	if err != nil {
		return 0, err
	}
	lanes, lane := r.lanes(m) // see priority.go
	writable := r.laneWritable(lanes, lane)
	if len(writable) == 0 {
		return 0, fmt.Errorf("%w: topic %q has no queue open to producers", ErrQueueNotWritable, m.Topic)
	}
	q, err := selectQueue(p.sel, m, writable)
	if err != nil {
		return 0, err
	}
	if q < 0 || q*lanes >= r.Queues {
		return 0, fmt.Errorf("%w: selector chose queue %d of %d", ErrQueueNotFound, q, r.Queues/lanes)
	}
	return q*lanes + lane, nil
}

func (p *Producer) check(ctx context.Context, msgs ...*Message) error {
	if p.closed.Load() {
		return ErrClosed
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", ErrInvalidArgument)
	}
	if len(msgs) == 0 {
		return fmt.Errorf("%w: no messages", ErrInvalidArgument)
	}
	for i, m := range msgs {
		if m == nil {
			return fmt.Errorf("%w: message %d is nil", ErrInvalidArgument, i)
		}
		if m.Topic != msgs[0].Topic {
			return fmt.Errorf("%w: a batch must be for one topic (%q and %q)", ErrInvalidArgument, msgs[0].Topic, m.Topic)
		}
		if m.Delay < 0 || m.TTL < 0 { // before the route: whether or not the topic exists
			return fmt.Errorf("%w: message %d has a negative delay or TTL", ErrInvalidDelay, i)
		}
	}
	if c := p.lastRoute.Load(); c != nil && c.topic == msgs[0].Topic {
		return nil // routes are cached only for topics that passed the checks below
	}
	if isInternalTopic(msgs[0].Topic) {
		return fmt.Errorf("%w: %q", ErrInternalTopic, msgs[0].Topic)
	}
	return ValidateName(msgs[0].Topic)
}

// routeRetryable reports whether a fresh route might make the send succeed.
func routeRetryable(err error) bool {
	return errors.Is(err, ErrQueueNotWritable) || errors.Is(err, ErrQueueNotFound)
}

// Send stores m and returns where it landed. Under SyncAlways it returns
// after the message is durable. An error matching ErrIndeterminate means
// the outcome is unknown: an fsync failed, or ctx ended after the broker
// took the message (the error then matches ctx's error too); a ctx that
// ended before gives its error alone, and nothing was stored. A nil ctx or
// m gets ErrInvalidArgument and a negative Delay or TTL ErrInvalidDelay,
// before m's topic is looked up: whether or not it exists.
func (p *Producer) Send(ctx context.Context, m *Message) (SendResult, error) {
	if err := p.check(ctx, m); err != nil {
		return SendResult{}, err
	}
	var res SendResult
	if len(p.hooks) == 0 { // nothing observes the send
		err := p.send(ctx, m, &res)
		return res, err
	}
	ctx, end := p.hooks.traceSend(ctx, p.hookPanics, m)
	ended := false
	defer end.endIfPanicking(&ended, p.hookPanics)
	p.hooks.beforeSend(ctx, m)
	err := p.send(ctx, m, &res)
	p.hooks.afterSend(ctx, m, res, err)
	ended = true
	end.one(res, err, p.hookPanics)
	return res, err
}

// send sends m and sets *res where it landed; on an error *res is left
// as it was. (The result is set in place: a SendResult returned through
// each call on the way costs as much as some of the work.)
func (p *Producer) send(ctx context.Context, m *Message, res *SendResult) error {
	err := p.sendOnce(ctx, m, false, res)
	if err != nil && routeRetryable(err) {
		// The cached route was stale (a queue closed to producers, or fewer
		// queues): once more on a fresh one.
		err = p.sendOnce(ctx, m, true, res)
	}
	return err
}

// sendOnce routes m (on a freshly read route when fresh) and appends it,
// on the caller's goroutine: once Close began (from the BeforeSend hooks
// or the selector, or from outside) it fails with ErrClosed, not sent.
func (p *Producer) sendOnce(ctx context.Context, m *Message, fresh bool, res *SendResult) error {
	now := time.Now() // one reading serves the route's expiry and the engine
	q, err := p.pick(ctx, m, fresh, now)
	if err != nil {
		return err
	}
	if p.closed.Load() {
		return ErrClosed
	}
	return p.appendOne(ctx, m, q, now, res)
}

// appendOne appends m to queue q as of now and sets *res where it landed.
func (p *Producer) appendOne(ctx context.Context, m *Message, q int, now time.Time, res *SendResult) error {
	if p.eng != nil {
		return p.sendEngine(ctx, m, q, now, res)
	}
	ar, err := p.append(ctx, &AppendRequest{Topic: m.Topic, Queue: q, Messages: []*Message{m}, Sync: p.sync})
	if err != nil {
		return err
	}
	*res = sendResult(m.Topic, ar, 0)
	return nil
}

// SendBatch stores msgs, all for one topic, in one queue and in order. The
// queue is chosen from the first message. Either every message is stored or
// none is. A delayed batch is delivered in its order too: its messages'
// delivery times (Delay or DeliverAt) must not go back, or it returns
// ErrInvalidDelay. As for Send, a nil ctx, no messages, a nil message or
// messages for more than one topic get ErrInvalidArgument and a negative
// Delay or TTL ErrInvalidDelay, whether or not the topic exists.
func (p *Producer) SendBatch(ctx context.Context, msgs []*Message) (BatchResult, error) {
	if err := p.check(ctx, msgs...); err != nil {
		return BatchResult{}, err
	}
	ctx, end := p.hooks.startSend(ctx, p.hookPanics, msgs...)
	ended := false
	defer end.endIfPanicking(&ended, p.hookPanics)
	for _, m := range msgs {
		p.hooks.beforeSend(ctx, m)
	}
	var (
		ar  AppendResult
		err error
	)
	for attempt := 0; attempt < 2; attempt++ {
		var q int
		if q, err = p.pick(ctx, msgs[0], attempt > 0, time.Now()); err != nil {
			break
		}
		if p.closed.Load() { // Close began, from a BeforeSend hook, the selector or outside
			err = ErrClosed
			break
		}
		ar, err = p.append(ctx, &AppendRequest{Topic: msgs[0].Topic, Queue: q, Messages: msgs, Sync: p.sync})
		if err == nil || !routeRetryable(err) {
			break
		}
	}
	res := BatchResult{Topic: msgs[0].Topic}
	if err == nil {
		res = BatchResult{Topic: msgs[0].Topic, Queue: ar.Queue, FirstOffset: ar.FirstOffset, StoredAt: ar.StoredAt, IDs: ar.IDs, Delayed: ar.Delayed, Duplicate: ar.Duplicate}
	}
	for i, m := range msgs {
		sr := SendResult{Topic: m.Topic}
		if err == nil {
			sr = sendResult(m.Topic, ar, i)
		}
		p.hooks.afterSend(ctx, m, sr, err)
	}
	ended = true
	if end != nil {
		end.call(batchResults(msgs[0].Topic, ar, len(msgs), err), err, p.hookPanics)
	}
	return res, err
}

// SendFuture is the pending result of SendAsync.
type SendFuture struct {
	done chan struct{}
	res  SendResult
	err  error
	// answered is set once the broker's AppendAsync answered the send, or
	// ended without returning (Producer.appendAsync).
	answered atomic.Bool
}

// Done is closed when the result is ready.
func (f *SendFuture) Done() <-chan struct{} { return f.done }

// Result waits for the send (or ctx) and returns its outcome. A nil ctx
// waits for the send alone.
func (f *SendFuture) Result(ctx context.Context) (SendResult, error) {
	if ctx == nil {
		<-f.done
		return f.res, f.err
	}
	select {
	case <-f.done:
		return f.res, f.err
	case <-ctx.Done():
		return SendResult{}, ctx.Err()
	}
}

// asyncAppender is implemented by brokers that can append without a
// goroutine per call (the in-process Engine). SendAsync uses it only on a
// broker that owns it (OwnsFastPaths), so that a wrapper's own Append is
// never bypassed.
type asyncAppender interface {
	AppendAsync(ctx context.Context, req *AppendRequest, cb func(AppendResult, error))
}

// SendAsync starts sending m and returns once the send is queued, without
// waiting for its outcome; many sends in flight let the engine batch them
// into one write and one fsync. The queue is bounded, as a producer's
// buffer is: the in-process Engine's writer queue (1,024 appends), a
// remote Client's or ClusterClient's append window (4,096 appends not yet
// answered, also while a ClusterClient looks for the leader). On a broker
// without an AppendAsync of its own (a wrapper of the Engine that
// overrides Append, a Broker with Append alone) each send runs as Send on
// a goroutine of its own, and the producer's window bounds them
// (ProducerOptions.AsyncWindow, 1,024 sends not yet completed by
// default). While the broker or window has room SendAsync returns at
// once; while it is full SendAsync blocks, as backpressure, until room
// frees or ctx ends: a send whose ctx ends while it waits is not sent, and
// its future fails with ctx's error (with ErrClosed if Close begins while
// it waits for the producer's window, or for room in its queue of sends
// to retry on a fresh route: see ProducerOptions.AsyncWindow). A sender
// that must never block gives ctx a deadline. Called on a goroutine running the broker's
// callbacks (CallbackRunner: a remote client's AppendAsync callback),
// SendAsync does not wait for room: its future fails at once with
// ErrWindowFull, not sent. The future completes when the send would have
// returned (on a topic with an OverflowDropOldest
// limit, once the topic is trimmed back to it, as Send returns). m must not
// be modified until then. Its AfterSend hooks (and trace end) run once
// the send completes, on a goroutine of the producer's, never on one of the
// broker's: one that panics there fails the future with ErrHookPanic, its
// SendResult unchanged, and is counted in Stats.ConsumerHookPanics (see
// Hooks). A send whose BeforeSend hooks or selector run when Close
// begins (or call it) is not sent: its future fails with ErrClosed, and
// its AfterSend hooks run on the calling goroutine before SendAsync
// returns (see Close).
func (p *Producer) SendAsync(ctx context.Context, m *Message) *SendFuture {
	f := &SendFuture{done: make(chan struct{})}
	if err := p.check(ctx, m); err != nil {
		f.err = err
		close(f.done)
		return f
	}
	ctx, end := p.hooks.traceSend(ctx, p.hookPanics, m)
	// finish runs on a goroutine of the producer's (completeAsync, when
	// the engine's callback completes the send): a hook that panics there
	// is recovered and counted (see Hooks).
	finish := func(res SendResult, err error) {
		var perr error
		hook := "AfterSend" // the hooks running; "" once they returned
		defer func() {
			if hook == "" {
				return
			}
			// Not a panic (they recover every one): runtime.Goexit.
			var left sendEnd // the trace ends that did not run
			if hook == "AfterSend" {
				left = end
			}
			p.hookGoexited(goexitError(hook), res, err, perr, left, f)
		}()
		perr = p.hooks.afterSendRecovered(ctx, m, res, err)
		if end != nil {
			hook = "TraceHooks.StartSend end"
			perr = errors.Join(perr, end.endRecovered([]SendResult{res}, err))
		}
		hook = ""
		countHookPanics(p.hookPanics, perr)
		f.res, f.err = res, withHookErr(err, perr)
		close(f.done)
	}
	finishEnds := false // once the user's code before the append returned, finish ends the send
	defer end.endIfPanicking(&finishEnds, p.hookPanics)
	p.hooks.beforeSend(ctx, m)
	// The queue is picked here, on the caller's goroutine, before the
	// send is counted for Close to wait for: a hook or selector that
	// calls Close must not wait for its own send (see Close).
	q, perr := p.pick(ctx, m, false, time.Now())
	finishEnds = true
	if err := p.beginAsync(); err != nil {
		// Close began meanwhile: nothing counts the send, so it ends here.
		finish(SendResult{}, err)
		return f
	}
	// passed is set once the send's count is handed to what completes
	// it. Until then SendAsync gives it back itself, also when the
	// broker's RunsCallback panics: the caller may recover the panic, and
	// Close must not wait for a send that never started.
	passed := false
	defer func() {
		if !passed {
			p.pending.Done()
			p.async.Done()
		}
	}()
	if p.aa == nil {
		if perr != nil && !routeRetryable(perr) {
			passed = true
			p.completeAsync(finish, SendResult{}, perr)
			return f
		}
		err := p.takeAsyncSlot(ctx)
		passed = true
		if err != nil {
			p.completeAsync(finish, SendResult{}, err)
			return f
		}
		go p.sendInWindow(ctx, m, q, perr, finish)
		return f
	}
	err := p.waitRetryRoom(ctx)
	passed = true
	if err != nil {
		p.completeAsync(finish, SendResult{}, err)
		return f
	}
	if perr != nil {
		p.failedAsync(ctx, m, perr, finish)
		return f
	}
	p.appendAsync(ctx, m, q, f, finish)
	return f
}

// appendAsync appends m to queue q through the broker's AppendAsync and
// completes the send through finish when it answers. A broker that never
// answers because its AppendAsync did not return completes it all the
// same, with an error matching ErrIndeterminate (it may have taken the
// message): and ErrGoexit when it called runtime.Goexit on this
// goroutine; when it panics, the panic goes on to the caller, unchanged.
// An answer that comes after that is dropped.
func (p *Producer) appendAsync(ctx context.Context, m *Message, q int, f *SendFuture, finish func(SendResult, error)) {
	returned := false
	defer func() {
		if returned {
			return
		}
		r := recover() // nil on runtime.Goexit, which recover cannot stop
		if f.answered.CompareAndSwap(false, true) {
			err := p.brokerCallEnded(m, true)
			if r != nil {
				err = fmt.Errorf("%w: the broker's AppendAsync for a SendAsync to topic %q panicked: %v", ErrIndeterminate, m.Topic, r)
			}
			p.completeAsync(finish, SendResult{}, err)
		}
		if r != nil {
			panic(r)
		}
	}()
	p.aa.AppendAsync(ctx, &AppendRequest{Topic: m.Topic, Queue: q, Messages: []*Message{m}, Sync: p.sync, detached: true},
		func(ar AppendResult, err error) {
			if !f.answered.CompareAndSwap(false, true) {
				return // after its AppendAsync ended without returning
			}
			if err != nil {
				p.failedAsync(ctx, m, err, finish)
				return
			}
			p.completeAsync(finish, sendResult(m.Topic, ar, 0), nil)
		})
	returned = true
}

// hookGoexited completes f, the future of a SendAsync whose send ended
// with res and err, when one of its AfterSend hooks or trace ends called
// runtime.Goexit (gerr), perr being the panics of the hooks that returned
// before. recover cannot stop a Goexit: the producer's goroutine that runs
// the hooks ends (runCompletions goes on on another), but the trace ends
// that did not run yet (left) still run, and the future reports the
// Goexit, which the engine logs and counts, so no one waits for it. The
// future completes even if one of those ends calls runtime.Goexit too.
func (p *Producer) hookGoexited(gerr error, res SendResult, err, perr error, left sendEnd, f *SendFuture) {
	perr = errors.Join(perr, gerr)
	defer func() {
		countHookPanics(p.hookPanics, perr)
		if e := trackerOf(p.b); e != nil {
			e.log.Error("producer hook called runtime.Goexit: the producer's goroutine that ran it has ended", "topic", res.Topic, "err", gerr)
		}
		f.res, f.err = res, withHookErr(err, perr)
		close(f.done)
	}()
	if left != nil {
		perr = errors.Join(perr, left.endRecovered([]SendResult{res}, withHookErr(err, gerr)))
	}
}

// failedAsync completes a SendAsync of m whose first attempt failed with
// err through finish, and ends its count in p.async. A stale route is
// retried as Send retries it: once, on a fresh route, by one of the
// producer's goroutines that retry such sends (retryStale: the engine's
// callback must not block).
func (p *Producer) failedAsync(ctx context.Context, m *Message, err error, finish func(SendResult, error)) {
	if !routeRetryable(err) {
		p.completeAsync(finish, SendResult{}, err)
		return
	}
	p.retryStale(ctx, m, finish)
}

// beginAsync counts a SendAsync call as pending, for Close to wait for,
// or returns ErrClosed once Close has begun.
func (p *Producer) beginAsync() error {
	p.asyncMu.RLock()
	defer p.asyncMu.RUnlock()
	if p.closed.Load() {
		return ErrClosed
	}
	p.async.Add(1)
	p.pending.Add(1)
	return nil
}

// ErrBusy is returned when a broker refuses a call for lack of capacity
// before running it: nothing was stored, and the call may be retried.
// Producers retry it themselves, backing off, until their context ends.
var ErrBusy = errors.New("equeue: broker busy")

// Bounds of the producer's backoff while the broker is busy.
const (
	busyBackoffMin = 5 * time.Millisecond
	busyBackoffMax = time.Second
)

// append appends req, retrying while the broker answers ErrBusy (the
// request was not run, so a retry cannot store it twice).
func (p *Producer) append(ctx context.Context, req *AppendRequest) (AppendResult, error) {
	wait := busyBackoffMin
	for {
		ar, err := p.b.Append(ctx, req)
		if !errors.Is(err, ErrBusy) {
			return ar, err
		}
		if !busyBackoff(ctx, &wait) {
			return AppendResult{}, err
		}
	}
}

// sendEngine is append for one message on the in-process engine, as of now
// (and of the time of each retry).
func (p *Producer) sendEngine(ctx context.Context, m *Message, q int, now time.Time, res *SendResult) error {
	wait := busyBackoffMin
	for {
		err := p.eng.sendOne(ctx, m.Topic, q, m, p.sync, now, res)
		if !errors.Is(err, ErrBusy) {
			return err
		}
		if !busyBackoff(ctx, &wait) {
			return err
		}
		now = time.Now()
	}
}

// busyBackoff sleeps before the retry of a call the broker refused as busy
// and doubles *wait, up to busyBackoffMax; false when ctx ended first.
func busyBackoff(ctx context.Context, wait *time.Duration) bool {
	// Jitter spreads the retries of many producers refused together.
	if !sleepCtx(ctx, *wait/2+time.Duration(rand.Int64N(int64(*wait/2)+1))) {
		return false
	}
	*wait = min(2**wait, busyBackoffMax)
	return true
}

// stripInternal lets consumers name the engine's retry and DLQ topics by
// name validation of their group part.
func stripInternal(topic string) string {
	for _, p := range []string{RetryTopicPrefix, DLQTopicPrefix} {
		if len(topic) > len(p) && topic[:len(p)] == p {
			return topic[len(p):]
		}
	}
	return topic
}
