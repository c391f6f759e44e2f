package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// FastPathOwner returns c: its AppendAsync stands in for its Append
// (equeue.OwnsFastPaths).
func (c *Client) FastPathOwner() any { return c }

// AppendAsync is Append that reports through cb instead of blocking the
// caller: equeue.Producer.SendAsync calls it. The appends of a Client travel
// pipelined on one AppendStream call, several per message, at most
// streamWindow unanswered; AppendAsync waits (bounded by ctx) while the
// window is full: backpressure, which equeue.Producer.SendAsync passes on
// to its caller. cb runs exactly once, on the caller's goroutine or the
// client's (the one reading the stream's answers, say), and must not
// block; it runs before Client.Close returns, never
// after: an AppendAsync waiting for a window slot when Close starts
// reports equeue.ErrClosed (not sent) before Close returns, and one called
// once Close has begun reports it before AppendAsync returns.
//
// cb may append: an AppendAsync called from a callback of the client that
// finds the window full does not wait for a slot, since its goroutine may
// be the one whose answers would free it: it reports ErrWindowFull at once
// (not sent). cb may call Close, which then does not wait (see Close).
//
// Outcomes are those of Append: an error from the broker means what it
// means there; ErrBusy is retried, backing off, until ctx ends. An append
// the broker answers with a failure it could not classify (Internal or
// Unknown without an engine error, or an item without a code, which a
// server of an earlier version sent) may be stored: its error matches
// equeue.ErrIndeterminate, as a unary Append's does. An append
// the broker may have received when the call broke, or when ctx ended,
// gets an error matching equeue.ErrIndeterminate: it may or may not be
// stored; when the call broke with its connection, the error matches
// ErrUnavailable too (as a unary Append's does), so check
// equeue.ErrIndeterminate first. One that never left the client gets its
// cause alone (ErrUnavailable, ctx's error, equeue.ErrClosed after Close):
// it was not stored. An append whose ctx ended before it left the client
// (before the call, or while it waited for a window slot or its turn on
// the stream) is never sent, as the engine in-process takes none; one the
// current stream can no longer carry (its connection went, the server
// away while the client was idle, say) goes on a new stream. So does
// an append whose answer could pass the client's MaxMessageBytes
// (equeue.ErrMessageTooLarge): the client refuses it before sending. A broker
// without AppendStream (an older version) gets unary Append calls, one
// goroutine each, each holding a slot of the window as a stream append
// does, for the rest of the client's life; one that refuses the
// stream as busy (it holds its ServerOptions.MaxAppendStreams) gets them
// for a while, up to ClientOptions.MaxReconnectDelay, after which the
// client opens a stream again.
//
// An append whose ctx carries outgoing metadata of the caller's
// (metadata.AppendToOutgoingContext: a per-call token, a trace header)
// goes as a unary Append call instead, on a goroutine of its own, so that
// the broker sees that metadata: the stream, shared by the client's
// appends, carries only the metadata it was opened with. Such appends keep
// no order, with the appends on the stream nor among themselves (two of
// them to one queue may be stored in either order). Each holds a slot of
// the same window as the stream's appends (streamWindow unanswered appends
// in all, on the stream or as unary calls) until its call ends:
// AppendAsync waits for one (bounded by ctx) while the window is full, so
// middleware that puts metadata on every context does not turn it into a
// goroutine, and a call held at the broker, per message.
func (c *Client) AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	if err := c.enter(ctx); err != nil {
		c.runners.report(cb, equeue.AppendResult{}, err)
		return
	}
	if !c.calls.enter() {
		c.runners.report(cb, equeue.AppendResult{}, equeue.ErrClosed)
		return
	}
	defer c.calls.leave()
	if err := checkAppend(req); err != nil {
		c.runners.report(cb, equeue.AppendResult{}, err)
		return
	}
	if err := ctx.Err(); err != nil {
		c.runners.report(cb, equeue.AppendResult{}, err) // never sent, as the engine takes none
		return
	}
	if err := c.answerFits(req); err != nil {
		c.runners.report(cb, equeue.AppendResult{}, err)
		return
	}
	if c.pipe.unary.Load() || callerMetadata(ctx) {
		c.pipe.goUnary(ctx, req, cb)
		return
	}
	s := &pipeSend{ctx: ctx, orig: req, cb: cb}
	var ok bool
	var err error
	if s.wire, ok, err = encodeAppendIn(req, &c.wires); err == nil && !ok {
		if s.in, err = appendToWire(req); err == nil {
			err = encodes(s.in)
		}
	}
	if err != nil {
		c.runners.report(cb, equeue.AppendResult{}, err)
		return
	}
	c.pipe.send(ctx, s)
}

// encodes refuses an append protobuf cannot encode (a string that is not
// UTF-8) before it joins a batch: on the stream its batch's encoding would
// fail, which ends the call, so this append and every other one of the
// batch, none of which left the client, would be reported unknown, and the
// appends in flight on the call lost to it. A unary call refuses it alone.
func encodes(in *pb.AppendRequest) error {
	if _, err := proto.Marshal(in); err != nil {
		return fmt.Errorf("%w: append cannot be encoded: %v", equeue.ErrInvalidArgument, err)
	}
	return nil
}

// appendToWire encodes an append for the wire.
func appendToWire(req *equeue.AppendRequest) (*pb.AppendRequest, error) {
	msgs, err := messagesToPB(req.Messages, wireTimes)
	if err != nil {
		return nil, err
	}
	sync, every, err := syncToPB(req.Sync)
	if err != nil {
		return nil, err
	}
	return &pb.AppendRequest{Topic: req.Topic, Queue: toInt32(req.Queue), Messages: msgs, Sync: sync, SyncInterval: every}, nil
}

// errIDCount is an answer with got IDs to an append of n messages.
func errIDCount(got, n int) error {
	return fmt.Errorf("remote: broker returned %d IDs for %d messages", got, n)
}

// Where a pipelined append is.
const (
	sendQueued   = iota // waiting to be sent
	sendInFlight        // sent on a stream, not answered
	sendBackoff         // refused as busy, waiting to be queued again
	sendDone            // answered, failed or dropped
)

// maxBatchBytes bounds a request of several appends, below any server's
// limit (a server the Broker service is registered on may read less than
// ServerOptions.MaxMessageBytes).
const maxBatchBytes = 1 << 20

// pipeSend is one AppendAsync call.
type pipeSend struct {
	ctx  context.Context
	orig *equeue.AppendRequest
	wire []byte            // orig encoded (appendwire.go), or nil and:
	in   *pb.AppendRequest // orig for protobuf to encode
	cb   func(equeue.AppendResult, error)

	// Guarded by appendPipe.mu.
	state    int
	reported bool // cb was called (a cancelled in-flight send stays in flight)
	busyWait time.Duration
	retry    *time.Timer // the pending retry of a send refused as busy
	stopCtx  func() bool
}

// wireSize is the encoded size of s's append.
func (s *pipeSend) wireSize() int {
	if s.wire != nil {
		return len(s.wire)
	}
	return proto.Size(s.in)
}

// itemSize is the encoded size of s's append sent as seq.
func (s *pipeSend) itemSize(seq uint64) int {
	if s.wire != nil {
		return streamItemSize(seq, len(s.wire))
	}
	return proto.Size(&pb.StreamAppend{Seq: seq, Append: s.in})
}

// protoForm is s's append as a protobuf message, for a batch protobuf
// encodes.
func (s *pipeSend) protoForm() *pb.AppendRequest {
	if s.in == nil {
		// Encoded by encodeAppend: its checks passed, appendToWire's are the same.
		s.in, _ = appendToWire(s.orig)
	}
	return s.in
}

// pipeStream is one AppendStream call.
type pipeStream struct {
	st       pb.Broker_AppendStreamClient
	cancel   context.CancelFunc
	maxBytes int // the smaller of the client's and the server's limit
	window   int // how many appends may be unanswered on it
	// Guarded by appendPipe.mu.
	inFlight map[uint64]*pipeSend
	draining bool // the server stops, or its connection left: send nothing more on it
	broken   bool
	answered bool // the server answered an append on it
	ended    bool // broke ran for it
	// sawReady: the connection's state was seen ready since ps opened
	// (connLeft).
	sawReady bool
	// departures is the count of the connection's departures (connWatch)
	// when ps began to open, and began the count of connections begun
	// once it opened (connLeft).
	departures, began uint64
	// writing is the first seq of the batch the sender is writing on it (0:
	// none): broke leaves that batch to the sender, which alone knows
	// whether it left the client; endErr is the error broke reported.
	writing uint64
	endErr  error
}

// appendPipe carries a Client's AppendAsync calls: one goroutine sends
// them, batched, on the current stream; one per stream reads its answers.
type appendPipe struct {
	c     *Client
	slots chan struct{} // one per send not done: the window
	base  context.Context
	stop  context.CancelFunc
	unary atomic.Bool // the broker has no AppendStream
	// connState is the state of the client's connection (its GetState;
	// a test sets another before the first send).
	connState func() connectivity.State

	mu      sync.Mutex
	queue   []*pipeSend
	cur     *pipeStream
	seq     uint64
	closed  bool
	started bool
	kick    chan struct{}
	wg      sync.WaitGroup // the sender and the readers
	// The retry timers of sends refused as busy (backoff) that are set or
	// running; close stops them, or waits for them.
	retries  sync.WaitGroup
	retrying map[*pipeSend]struct{} // the sends waiting for a busy retry
	unaries  sync.WaitGroup         // the goroutines of unary appends (goUnary)
	// The reports of sends whose context ended (cancelled), counted
	// under mu while the send is not done: close waits for them.
	cancels sync.WaitGroup
	// Streams that broke before answering any append, in a row, and the
	// time before which no new stream is opened: a server (or a proxy)
	// that ends every stream at once must not be called again in a tight
	// loop. A stream that answered resets both.
	earlyBreaks int
	reopenAt    time.Time
	maxReopen   time.Duration // the longest wait (ClientOptions.MaxReconnectDelay)
	// Stream opens refused as busy in a row (the broker holds its
	// MaxAppendStreams), and the time until which sends go as unary calls
	// instead of opening another; the backoff is reopenAt's. A stream that
	// opens resets both.
	busyOpens  int
	unaryUntil time.Time

	// The sender's, reused from one batch to the next.
	items []streamItem
	sends []*pipeSend
}

func newAppendPipe(c *Client, maxReopen time.Duration) *appendPipe {
	p := &appendPipe{c: c, slots: make(chan struct{}, streamWindow), kick: make(chan struct{}, 1), maxReopen: maxReopen, retrying: map[*pipeSend]struct{}{},
		connState: c.conn.GetState}
	p.base, p.stop = context.WithCancel(context.Background())
	return p
}

// close fails what is queued or waiting for a busy retry with ErrClosed,
// and what is in flight as indeterminate, and waits for the pipe's
// goroutines and retry timers: once it returns, no send's callback runs.
// The callbacks it runs itself have their panics followed by cp.
func (p *appendPipe) close(cp *closePanics) {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.stop()
	p.poke()
	p.wg.Wait()
	// The readers are done: no retry is set any more. A timer that fires
	// from now on finds the pipe closed and fails its send; one stopped
	// here never runs, so its send is failed here.
	p.mu.Lock()
	var waiting []*pipeSend
	for s := range p.retrying {
		if s.retry != nil && s.retry.Stop() {
			waiting = append(waiting, s)
		}
		delete(p.retrying, s)
		s.retry = nil
	}
	p.retries.Add(-len(waiting))
	p.mu.Unlock()
	// A callback that panics here, on the Close's goroutine, does not stop
	// the close: the rest runs still (closeQueue), then the panic goes on.
	defer p.closeQueue(cp)
	forEach(cp, waiting, p.closedSend)
}

// closeQueue ends close: it waits for the busy retries, fails what is
// queued with ErrClosed, and waits for the reports of sends whose context
// ended.
func (p *appendPipe) closeQueue(cp *closePanics) {
	p.retries.Wait()
	p.mu.Lock()
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	defer p.waitCancelled()
	forEach(cp, q, p.closedSend)
}

// waitCancelled waits for the reports of sends whose context ended. Every
// send is done now: a cancellation that had not taken one before reports
// nothing, and those that took one are counted.
func (p *appendPipe) waitCancelled() {
	if hook := testHookCloseWaitsCancelled.Load(); hook != nil {
		(*hook)()
	}
	p.cancels.Wait()
}

// closedSend fails s, which never left the client, as the client closed.
func (p *appendPipe) closedSend(s *pipeSend) {
	p.finish(s, equeue.AppendResult{}, equeue.ErrClosed)
}

func (p *appendPipe) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// send takes a window slot (waiting while the window is full) and queues s.
func (p *appendPipe) send(ctx context.Context, s *pipeSend) {
	if !p.takeSlot(ctx, s.cb) {
		return
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		p.c.runners.report(s.cb, equeue.AppendResult{}, equeue.ErrClosed)
		return
	}
	if err := ctx.Err(); err != nil {
		// It ended while s waited for a slot: s is not sent.
		p.mu.Unlock()
		<-p.slots
		p.c.runners.report(s.cb, equeue.AppendResult{}, err)
		return
	}
	s.state = sendQueued
	p.queue = append(p.queue, s)
	if ctx.Done() != nil { // else it never ends: no hook to register
		s.stopCtx = context.AfterFunc(ctx, func() { p.cancelled(s) })
	}
	if !p.started {
		p.started = true
		p.wg.Add(1)
		go p.sender()
	}
	p.mu.Unlock()
	p.poke()
}

// takeSlot takes a window slot, waiting while the window is full; false
// when ctx ended or the client closed first (cb is then called).
func (p *appendPipe) takeSlot(ctx context.Context, cb func(equeue.AppendResult, error)) bool {
	if ctx.Err() == nil {
		// Usually a slot is free: take it without a select of three.
		select {
		case p.slots <- struct{}{}:
			return true
		default:
		}
	}
	if p.c.runners.current() {
		// A callback's append: its goroutine may be the reader whose
		// answers would free a slot.
		p.c.runners.call(cb, equeue.AppendResult{}, ErrWindowFull)
		return false
	}
	if hook := testHookSlotWait.Load(); hook != nil {
		(*hook)()
	}
	select {
	case p.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		p.c.runners.report(cb, equeue.AppendResult{}, ctx.Err())
	case <-p.base.Done():
		p.c.runners.report(cb, equeue.AppendResult{}, equeue.ErrClosed)
	}
	return false
}

// testHookSlotWait, when set by a test, runs in takeSlot when a send
// finds the window full and waits for a slot (atomic as
// testHookBeforeBatch).
var testHookSlotWait atomic.Pointer[func()]

// cancelled handles s's context ending: a send not on the wire is dropped
// (not stored); one in flight is reported unknown, its answer ignored.
// It runs on a goroutine of its own (context.AfterFunc): a report it
// takes on is counted in p.cancels, which close waits for.
func (p *appendPipe) cancelled(s *pipeSend) {
	id := p.c.runners.enter()
	defer p.c.runners.exit(id)
	err := s.ctx.Err()
	p.mu.Lock()
	if s.state == sendDone || s.reported {
		p.mu.Unlock()
		return
	}
	p.cancels.Add(1)
	defer p.cancels.Done()
	switch s.state {
	case sendQueued:
		for i, q := range p.queue {
			if q == s {
				p.queue = append(p.queue[:i], p.queue[i+1:]...)
				break
			}
		}
		p.mu.Unlock()
		p.finish(s, equeue.AppendResult{}, err)
		return
	case sendBackoff:
		p.stopRetry(s)
		p.mu.Unlock()
		p.finish(s, equeue.AppendResult{}, fmt.Errorf("%w (broker busy until the context ended)", err))
		return
	case sendInFlight:
		if !s.reported {
			s.reported = true
			p.mu.Unlock()
			p.c.runners.call(s.cb, equeue.AppendResult{}, fmt.Errorf("%w: context ended with the append sent and not answered: %w", equeue.ErrIndeterminate, err))
			return
		}
	}
	p.mu.Unlock()
}

// finish ends s: it frees its window slot, then reports (unless a
// cancellation already did).
func (p *appendPipe) finish(s *pipeSend, res equeue.AppendResult, err error) {
	p.mu.Lock()
	if s.state == sendDone {
		p.mu.Unlock()
		return
	}
	s.state = sendDone
	reported := s.reported
	s.reported = true
	if s.stopCtx != nil {
		s.stopCtx()
	}
	p.mu.Unlock()
	<-p.slots
	if !reported {
		p.c.runners.call(s.cb, res, err)
	}
}

// sender sends what is queued, opening a stream when there is none.
func (p *appendPipe) sender() {
	defer p.wg.Done()
	id := p.c.runners.enter()
	defer p.c.runners.exit(id)
	for {
		select {
		case <-p.kick:
		case <-p.base.Done():
			return
		}
		for p.sendSome() {
		}
	}
}

// sendSome sends one batch; false when nothing is left to send or the
// client closed.
func (p *appendPipe) sendSome() bool {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return false
	}
	ps := p.cur
	if ps != nil && !ps.broken && p.connLeft(ps) {
		ps.draining = true
	}
	var done *pipeStream
	if ps != nil && (ps.draining || ps.broken) {
		if ps.draining {
			done = ps
		}
		p.cur, ps = nil, nil
	}
	empty := len(p.queue) == 0
	p.mu.Unlock()
	if done != nil {
		_ = done.st.CloseSend() // only this goroutine sends on a stream
	}
	if empty {
		return false
	}
	if ps == nil {
		if p.unaryWhileBusy() {
			return false
		}
		if d := p.reopenDelay(); d > 0 {
			// Then look at the queue again: sends whose context ended
			// meanwhile have left it.
			return p.pause(d)
		}
		var err error
		if ps, err = p.open(); err != nil {
			p.openFailed(err)
			return true
		}
	}
	if hook := testHookBeforeBatch.Load(); hook != nil {
		(*hook)(p, ps)
	}
	p.mu.Lock()
	if ps.broken {
		// The stream broke since it was looked up (broke took what was in
		// flight on it): the next round sends on a new one.
		p.mu.Unlock()
		return true
	}
	batch, sends := p.items[:0], p.sends[:0]
	byProto := false // an append of the batch is left to protobuf
	size := 16
	var tooBig, ended []*pipeSend
	n := 0
	room := ps.window - len(ps.inFlight)
	for _, s := range p.queue {
		if len(batch) >= room {
			break
		}
		if s.ctx.Err() != nil {
			// Its context ended before it left the client: it is not
			// sent (its cancellation may not have run yet).
			ended = append(ended, s)
			n++
			continue
		}
		seq := p.seq + 1
		sz := s.itemSize(seq) + 8
		if sz > ps.maxBytes-16 {
			tooBig = append(tooBig, s)
			n++
			continue
		}
		// A large append goes alone; small ones share a request of up
		// to maxBatchBytes.
		if len(batch) > 0 && size+sz > min(ps.maxBytes, maxBatchBytes) {
			break
		}
		p.seq++
		size += sz
		batch = append(batch, streamItem{seq: seq, wire: s.wire})
		sends = append(sends, s)
		byProto = byProto || s.wire == nil
		s.state = sendInFlight
		ps.inFlight[seq] = s
		n++
	}
	clear(p.queue[:n])
	p.queue = p.queue[n:]
	if len(batch) > 0 {
		ps.writing = batch[0].seq
	}
	p.mu.Unlock()
	if n == 0 {
		return false // the window is full: answers poke the sender
	}
	for _, s := range ended {
		p.finish(s, equeue.AppendResult{}, s.ctx.Err())
	}
	for _, s := range tooBig {
		p.finish(s, equeue.AppendResult{}, fmt.Errorf("remote: append of %d bytes is over the limit of %d: %w",
			s.wireSize(), ps.maxBytes, equeue.ErrMessageTooLarge))
	}
	if len(batch) > 0 {
		var req any
		if byProto {
			in := &pb.AppendStreamRequest{Appends: make([]*pb.StreamAppend, len(batch))}
			for i, it := range batch {
				in.Appends[i] = &pb.StreamAppend{Seq: it.seq, Append: sends[i].protoForm()}
			}
			req = in
		} else {
			req = encodeStreamRequest(batch)
		}
		p.wrote(ps, sends, ps.st.SendMsg(req))
	}
	// SendMsg encoded the request: the slices are free for the next batch.
	clear(batch)
	clear(sends)
	p.items, p.sends = batch[:0], sends[:0]
	return true
}

// testHookBeforeBatch, when set by a test, runs in sendSome once the
// stream to send on is known, before the batch is taken from the queue.
// Atomic: a reader or sender of an earlier test's client may still read
// it while a test sets it.
var testHookBeforeBatch atomic.Pointer[func(p *appendPipe, ps *pipeStream)]

// reopenBackoffMin is the wait before opening a stream again after one
// broke before answering anything; it doubles with each such stream in a
// row, up to ClientOptions.MaxReconnectDelay.
const reopenBackoffMin = 100 * time.Millisecond

// reopenBackoff is the longest wait before opening a stream after n streams
// in a row broke before answering: reopenBackoffMin doubled for each after
// the first, at most maxWait.
func reopenBackoff(n int, maxWait time.Duration) time.Duration {
	d := min(reopenBackoffMin, maxWait)
	for i := 1; i < n && d < maxWait; i++ {
		d = min(2*d, maxWait)
	}
	return d
}

// reopenDelay is how long the sender must still wait before opening a
// stream.
func (p *appendPipe) reopenDelay() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return time.Until(p.reopenAt)
}

// pause waits d, or until the client closes: then it returns false.
func (p *appendPipe) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.base.Done():
		return false
	}
}

// open starts an AppendStream call and its reader.
func (p *appendPipe) open() (*pipeStream, error) {
	// Noted before the call: a departure from now on may be the
	// connection the call goes on.
	departures := p.c.watch.departures()
	ctx, cancel := context.WithCancel(p.base)
	// The broker splits its answers within the client's limit.
	st, err := p.c.api.AppendStream(metadata.AppendToOutgoingContext(ctx, mdMaxAnswerBytes, strconv.Itoa(p.c.maxAnswer)))
	if err != nil {
		cancel()
		return nil, err
	}
	md, err := st.Header()
	limit := 0
	if err == nil {
		if v := md.Get(mdMaxMessageBytes); len(v) > 0 {
			limit, _ = strconv.Atoi(v[0])
		}
	}
	if limit <= 0 {
		// The call ended at once (refused, or no such method): its status says why.
		_, err = st.Recv()
		cancel()
		if err == nil || errors.Is(err, io.EOF) {
			err = status.Error(codes.Internal, "remote: append stream opened without a size limit")
		}
		return nil, err
	}
	window := streamWindow
	if v := md.Get(mdStreamWindow); len(v) > 0 {
		if w, err := strconv.Atoi(v[0]); err == nil && w > 0 {
			window = min(w, streamWindow)
		}
	}
	ps := &pipeStream{st: st, cancel: cancel, maxBytes: min(limit, p.c.maxAnswer), window: window, inFlight: map[uint64]*pipeSend{},
		sawReady: p.connState() == connectivity.Ready, departures: departures,
		// Its connection began before its header came.
		began: p.c.watch.began()}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		cancel()
		return nil, equeue.ErrClosed
	}
	p.cur = ps
	p.busyOpens, p.unaryUntil = 0, time.Time{}
	p.wg.Add(1)
	p.mu.Unlock()
	go p.reader(ps)
	return ps, nil
}

// openFailed fails what is queued (nothing of it left the client), or
// moves it to unary calls: for good when the broker has no AppendStream,
// for a while when it refused the stream as busy (it holds its
// MaxAppendStreams), so that sends go on without one.
func (p *appendPipe) openFailed(err error) {
	unimplemented := status.Code(err) == codes.Unimplemented
	if unimplemented {
		p.unary.Store(true)
		p.c.log.Info("broker has no AppendStream: appending with unary calls")
	}
	ferr := p.c.fail(err)
	busy := errors.Is(ferr, ErrBusy)
	p.mu.Lock()
	if busy {
		p.busyOpens++
		p.unaryUntil = time.Now().Add(jitter(reopenBackoff(p.busyOpens, p.maxReopen)))
	}
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	if busy {
		p.c.log.Debug("broker refused an append stream as busy: appending with unary calls for a while", "err", ferr)
	}
	for _, s := range q {
		if unimplemented || busy {
			p.finishUnary(s)
			continue
		}
		// Queued, s never left the client (one refused as busy ran
		// nothing): another node may take it.
		p.finish(s, equeue.AppendResult{}, unsentUnavailable(ferr))
	}
}

// unaryWhileBusy sends what is queued as unary calls while a stream the
// broker refused as busy is not to be opened again yet; false after that.
func (p *appendPipe) unaryWhileBusy() bool {
	p.mu.Lock()
	if !time.Now().Before(p.unaryUntil) {
		p.mu.Unlock()
		return false
	}
	q := p.queue
	p.queue = nil
	p.mu.Unlock()
	for _, s := range q {
		p.finishUnary(s)
	}
	return true
}

// finishUnary runs s as a unary Append, which keeps s's window slot.
func (p *appendPipe) finishUnary(s *pipeSend) {
	p.mu.Lock()
	if s.state == sendDone {
		p.mu.Unlock()
		return
	}
	s.state = sendDone
	if s.stopCtx != nil {
		s.stopCtx()
	}
	p.mu.Unlock()
	p.runUnary(s.ctx, s.orig, s.cb)
}

// goUnary runs req as a unary Append on a goroutine of its own, which
// reports to cb. It takes a slot of the window the stream's appends hold
// (waiting, bounded by ctx, while the window is full), so that these
// goroutines, and the calls the broker holds for them, are as bounded as
// the appends on the stream.
func (p *appendPipe) goUnary(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	if !p.takeSlot(ctx, cb) {
		return
	}
	p.runUnary(ctx, req, cb)
}

// runUnary runs req, which holds a window slot, as a unary Append on a
// goroutine of its own; the slot is freed once the call ended, before cb
// runs. After close, it reports equeue.ErrClosed at once. Client.Close
// waits for these goroutines (waitUnary) once the connection is closed.
func (p *appendPipe) runUnary(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error)) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.slots
		p.c.runners.report(cb, equeue.AppendResult{}, equeue.ErrClosed)
		return
	}
	p.unaries.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.unaries.Done()
		id := p.c.runners.enter()
		defer p.c.runners.exit(id)
		res, err := p.c.appendUnary(ctx, req)
		<-p.slots
		p.c.runners.call(cb, res, err)
	}()
}

// waitUnary waits for the unary appends' goroutines (goUnary); it follows
// close, so none starts any more.
func (p *appendPipe) waitUnary() {
	p.unaries.Wait()
}

// reader reads ps's answers until the call ends, then reports what is
// still in flight on it as unknown.
func (p *appendPipe) reader(ps *pipeStream) {
	defer p.wg.Done()
	id := p.c.runners.enter()
	defer p.c.runners.exit(id)
	defer ps.cancel()
	var sends []*pipeSend // the sends of one answer
	for {
		var resp streamAnswers
		if err := ps.st.RecvMsg(&resp); err != nil {
			if hook := testHookStreamEnded.Load(); hook != nil {
				(*hook)(ps)
			}
			p.broke(ps, err)
			return
		}
		if resp.draining {
			// The server reads no more: the sender closes our side, so the
			// server ends the call once it has answered; sends go on a new call.
			p.mu.Lock()
			ps.draining = true
			p.mu.Unlock()
			p.poke()
		}
		sends = p.answered(ps, resp.results, sends)
	}
}

// testHookStreamEnded, when set by a test, runs in the reader once the
// call has ended, before broke (atomic as testHookBeforeBatch).
var testHookStreamEnded atomic.Pointer[func(ps *pipeStream)]

// answered completes the sends ps answers with results; it returns sends,
// emptied, for the next answer.
func (p *appendPipe) answered(ps *pipeStream, results []streamAnswer, sends []*pipeSend) []*pipeSend {
	if len(results) == 0 {
		return sends
	}
	p.mu.Lock()
	ps.answered = true
	if !ps.sawReady {
		p.seeReady(ps)
	}
	for i := range results {
		seq := results[i].seq
		sends = append(sends, ps.inFlight[seq])
		delete(ps.inFlight, seq)
	}
	waiting := len(p.queue) > 0
	p.mu.Unlock()
	if waiting {
		p.poke() // there is room on the stream again
	}
	for i, s := range sends {
		if s != nil {
			p.complete(s, &results[i])
		}
	}
	clear(sends)
	return sends[:0]
}

// complete ends s, which r answers.
func (p *appendPipe) complete(s *pipeSend, r *streamAnswer) {
	if r.err != nil {
		st := pullErrorStatus(r.err).Err()
		err := fromStatus(st)
		if errors.Is(err, ErrBusy) && p.backoff(s) {
			return
		}
		if !brokerAnswer(st) {
			// A failure the broker could not classify (Internal or
			// Unknown without an engine error, a panic among them): the
			// append may be stored, as a unary Append answered so. So
			// may one of an item without a code, which reads as Unknown:
			// a server of an earlier version sent one after storing the
			// append, for a backend error whose status said OK
			// (TestAnswer_ErrorItemWithoutACodeIsAnError).
			err = fmt.Errorf("%w: remote: append answered with a failure of unknown outcome: %w", equeue.ErrIndeterminate, err)
		}
		p.finish(s, equeue.AppendResult{}, err)
		return
	}
	res, err := r.resp.result(len(s.orig.Messages))
	p.finish(s, res, err)
}

// backoff queues s again after a pause, as the unary calls retry ErrBusy;
// false when s's context has ended or the client closed.
func (p *appendPipe) backoff(s *pipeSend) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s.state != sendInFlight || s.reported || p.closed || s.ctx.Err() != nil {
		return false
	}
	s.busyWait = min(max(2*s.busyWait, busyBackoffMin), busyBackoffMax)
	s.state = sendBackoff
	defer func() {
		if hook := testHookBusyBackoff.Load(); hook != nil {
			(*hook)(s.busyWait)
		}
	}()
	p.retries.Add(1)
	p.retrying[s] = struct{}{}
	s.retry = time.AfterFunc(jitter(s.busyWait), func() {
		defer p.retries.Done()
		p.mu.Lock()
		s.retry = nil
		delete(p.retrying, s)
		if s.state != sendBackoff || s.ctx.Err() != nil { // cancelled reports it
			p.mu.Unlock()
			return
		}
		if p.closed {
			p.mu.Unlock()
			id := p.c.runners.enter()
			defer p.c.runners.exit(id)
			p.finish(s, equeue.AppendResult{}, equeue.ErrClosed)
			return
		}
		s.state = sendQueued
		p.queue = append(p.queue, s)
		p.mu.Unlock()
		p.poke()
	})
	return true
}

// testHookBusyBackoff, when set by a test, runs in backoff once a send's
// retry is set, with the send's backoff (atomic as testHookBeforeBatch).
var testHookBusyBackoff atomic.Pointer[func(wait time.Duration)]

// stopRetry stops s's busy retry, if it has not fired yet. p.mu is held.
func (p *appendPipe) stopRetry(s *pipeSend) {
	delete(p.retrying, s)
	if s.retry != nil && s.retry.Stop() {
		p.retries.Done()
	}
	s.retry = nil
}

// broke ends ps: what is in flight on it may or may not be stored. A batch
// the sender is writing is left to it (wrote).
func (p *appendPipe) broke(ps *pipeStream, err error) {
	var ferr error
	if p.c.closed.Load() {
		ferr = fmt.Errorf("%w: %w: client closed with the append sent and not answered", equeue.ErrIndeterminate, equeue.ErrClosed)
	} else if cause := fromStatus(err); errors.Is(cause, ErrUnavailable) {
		// The connection failed (or the broker went away): the error
		// matches its cause too, as a unary append's does, so that a
		// ClusterClient forgets that leader. It is checked for
		// ErrIndeterminate first: the append may be stored.
		ferr = fmt.Errorf("%w: remote: append stream broke with the append sent and not answered: %w", equeue.ErrIndeterminate, cause)
	} else {
		ferr = fmt.Errorf("%w: remote: append stream broke with the append sent and not answered: %v", equeue.ErrIndeterminate, cause)
	}
	p.mu.Lock()
	ps.broken = true
	ps.endErr = ferr
	if p.cur == ps {
		p.cur = nil
	}
	if !ps.ended {
		ps.ended = true
		if ps.answered {
			p.earlyBreaks, p.reopenAt = 0, time.Time{}
		} else {
			p.earlyBreaks++
			p.reopenAt = time.Now().Add(jitter(reopenBackoff(p.earlyBreaks, p.maxReopen)))
		}
	}
	left := ps.inFlight
	if ps.writing == 0 {
		ps.inFlight = nil
	} else {
		left = make(map[uint64]*pipeSend, len(ps.inFlight))
		for seq, s := range ps.inFlight {
			if seq < ps.writing {
				left[seq] = s
				delete(ps.inFlight, seq)
			}
		}
	}
	p.mu.Unlock()
	p.poke() // sends waiting for room on ps go on a new stream
	for _, s := range left {
		p.finish(s, equeue.AppendResult{}, ferr)
	}
}

// jitter spreads the retries of sends refused together over [d/2, d].
func jitter(d time.Duration) time.Duration {
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// testHookCloseWaitsCancelled, when set by a test, runs in close before
// it waits for the reports of sends whose context ended (atomic as
// testHookBeforeBatch).
var testHookCloseWaitsCancelled atomic.Pointer[func()]
