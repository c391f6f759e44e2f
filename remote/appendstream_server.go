package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// streamWindow bounds the appends of one AppendStream call that the server
// has read and not answered yet; the client keeps within it too. It bounds
// the call's memory and, for a backend without AppendAsync, its goroutines.
const streamWindow = 4096

// streamDrainTimeout is how long a stopping server waits, once every append
// it read is answered, for the client to close its side of the call.
const streamDrainTimeout = 5 * time.Second

// Headers in which the server tells the client the largest request it
// reads, so the client packs appends within it, and how many appends the
// client may have unanswered on the call (at most MaxInFlight, so one
// client alone is not refused as busy).
const (
	mdMaxMessageBytes = "equeue-max-message-bytes"
	mdStreamWindow    = "equeue-stream-window"
)

// mdMaxAnswerBytes is the header in which the client tells the server the
// largest answer message it receives (its MaxMessageBytes); the server
// splits its answers within it. A client that sends none is taken to have
// the default limit.
const mdMaxAnswerBytes = "equeue-max-answer-bytes"

// asyncBroker is a backend that can append without a goroutine per call
// (the engine and its namespaces).
type asyncBroker interface {
	AppendAsync(ctx context.Context, req *equeue.AppendRequest, cb func(equeue.AppendResult, error))
}

// appendStream serves one AppendStream call: this goroutine answers, a
// second one reads. Each append is authorized, counted against MaxInFlight
// (waiting first, with the reader, while the call's connection holds its
// share of it: streamSlots) and run as the unary Append would be; its
// answer carries its seq.
type appendStream struct {
	v      *service
	st     pb.Broker_AppendStreamServer
	ctx    context.Context
	rights Rights     // of the call's token; RightAll without authentication
	limit  int        // the largest answer message the client receives
	slots  *connSlots // of the call's connection; nil: bounded by MaxInFlight alone

	mu       sync.Mutex
	space    *sync.Cond // signalled when pending drops or the call ends
	results  []streamOut
	spare    []streamOut // the slice of the last answer sent, for reuse
	pending  int         // appends read and not yet answered on the wire
	readDone bool        // the reader stopped
	readErr  error
	quit     bool          // the answering side ended: the reader stops
	wake     chan struct{} // wakes the answering side
	draining bool          // the server stops: appends read now are refused
}

// AppendStream runs a pipelined append call (see appendStream).
func (v *service) AppendStream(st pb.Broker_AppendStreamServer) error {
	rights, err := v.s.streamRights(st.Context())
	if err != nil {
		v.s.refusals.refused(st.Context(), pb.Broker_AppendStream_FullMethodName, err)
		return err
	}
	if n := v.s.streams.Add(1); n > v.s.maxStreams {
		v.s.streams.Add(-1)
		v.s.log.Debug("append stream refused: busy", "limit", v.s.maxStreams)
		return toStatus(fmt.Errorf("%w: %d append streams open", ErrBusy, v.s.maxStreams))
	}
	defer v.s.streams.Add(-1)
	key, err := v.s.streamShare.take(st.Context())
	if err != nil {
		v.s.log.Debug("append stream refused: busy", "peer", peerAddr(st.Context()), "err", err)
		return toStatus(err)
	}
	defer v.s.streamShare.give(key)
	window := min(streamWindow, v.s.maxInFlight)
	if err := st.SendHeader(metadata.Pairs(mdMaxMessageBytes, strconv.Itoa(v.s.maxMessageBytes),
		mdStreamWindow, strconv.FormatInt(window, 10))); err != nil {
		return err
	}
	slots := v.s.streamSlots.join(st.Context())
	defer v.s.streamSlots.leave(slots)
	a := &appendStream{v: v, st: st, ctx: st.Context(), rights: rights, limit: clientAnswerLimit(st.Context()), slots: slots, wake: make(chan struct{}, 1)}
	a.space = sync.NewCond(&a.mu)
	var reader sync.WaitGroup
	reader.Add(1)
	go func() {
		defer reader.Done()
		a.read()
	}()
	err = a.answer()
	a.mu.Lock()
	a.quit = true
	a.space.Broadcast()
	readDone := a.readDone
	a.mu.Unlock()
	if readDone {
		reader.Wait()
	}
	// Otherwise the reader is in Recv, which returns as the call ends.
	return err
}

// streamRights authenticates an AppendStream call. Each append is then
// checked against the rights as the unary Append would be (a consume
// token may append to reply topics only).
func (s *Server) streamRights(ctx context.Context) (Rights, error) {
	if s.tokens == nil {
		return RightAll, nil
	}
	if err := s.tokens.authorize(ctx, pb.Broker_AppendStream_FullMethodName, nil); err != nil {
		return 0, err
	}
	e, _ := s.tokens.bearer(ctx)
	return e.rights, nil
}

// read reads appends until the client closes its side or the call ends,
// never holding more than streamWindow unanswered.
func (a *appendStream) read() {
	for {
		a.mu.Lock()
		for a.pending >= streamWindow && !a.quit {
			a.space.Wait()
		}
		quit := a.quit
		a.mu.Unlock()
		if quit {
			return
		}
		in := &appendsIn{direct: true}
		if err := a.st.RecvMsg(in); err != nil {
			a.mu.Lock()
			a.readDone, a.readErr = true, err
			a.mu.Unlock()
			a.kick()
			return
		}
		items := in.appends()
		a.mu.Lock()
		a.pending += len(items)
		draining := a.draining
		a.mu.Unlock()
		for i := range items {
			a.run(&items[i], draining)
		}
	}
}

// run starts one append; its answer comes through done.
func (a *appendStream) run(it *streamIn, draining bool) {
	seq := it.seq
	var cb func(equeue.AppendResult, error) // once the append holds a slot
	defer func() {
		if p := recover(); p != nil {
			a.v.s.log.Error("panic in call", "method", pb.Broker_AppendStream_FullMethodName, "panic", p, "stack", string(debug.Stack()))
			err := status.Errorf(codes.Internal, "remote: internal error in %s", pb.Broker_AppendStream_FullMethodName)
			if cb != nil {
				cb(equeue.AppendResult{}, err) // gives the slot back
				return
			}
			a.done(seq, equeue.AppendResult{}, err)
		}
	}()
	if draining {
		a.done(seq, equeue.AppendResult{}, errStopping)
		return
	}
	if !it.present {
		a.done(seq, equeue.AppendResult{}, fmt.Errorf("%w: stream append %d is empty", equeue.ErrInvalidArgument, seq))
		return
	}
	if need := appendRights(it.d.topic); a.rights&need == 0 {
		err := fmt.Errorf("%w: %s needs %s rights, token has %s", ErrPermissionDenied, pb.Broker_Append_FullMethodName, need, a.rights)
		a.v.s.refusals.refused(a.ctx, pb.Broker_AppendStream_FullMethodName, err)
		a.done(seq, equeue.AppendResult{}, err)
		return
	}
	s := a.v.s
	// Past the connection's share the reader waits here, so the rest of the
	// window waits in the stream instead of taking places from other clients.
	if err := s.streamSlots.take(a.ctx, a.slots); err != nil {
		a.done(seq, equeue.AppendResult{}, err)
		return
	}
	if n := s.inFlight.Add(1); n > s.maxInFlight {
		s.inFlight.Add(-1)
		s.streamSlots.give(a.slots)
		a.done(seq, equeue.AppendResult{}, fmt.Errorf("%w: %d calls in flight", ErrBusy, s.maxInFlight))
		return
	}
	cb = a.slotAnswer(it)
	req, err := it.request()
	if err != nil {
		cb(equeue.AppendResult{}, err)
		return
	}
	if ab := a.v.async; ab != nil {
		ab.AppendAsync(a.ctx, req, cb)
		return
	}
	// At most streamWindow of these per call: the reader waits for room.
	// cb is passed, not captured: a captured cb would be moved to the heap
	// on every call, the asynchronous backend's too.
	go func(cb func(equeue.AppendResult, error)) {
		defer func() {
			if p := recover(); p != nil {
				s.log.Error("panic in call", "method", pb.Broker_AppendStream_FullMethodName, "panic", p, "stack", string(debug.Stack()))
				cb(equeue.AppendResult{}, status.Errorf(codes.Internal, "remote: internal error in %s", pb.Broker_AppendStream_FullMethodName))
			}
		}()
		cb(a.v.e.Append(a.ctx, req))
	}(cb)
}

// slotAnswer returns the callback of append it, which holds a slot of
// MaxInFlight (and of its connection's share): its first call gives the
// slot back and answers the append, later ones (a backend that panicked
// after it answered) do nothing. So a panic, whenever it comes, neither
// keeps the slot nor answers twice.
// Its once-flag is a field of it, not one more allocation per append.
func (a *appendStream) slotAnswer(it *streamIn) func(equeue.AppendResult, error) {
	return func(res equeue.AppendResult, err error) {
		if it.answered.CompareAndSwap(false, true) {
			a.v.s.inFlight.Add(-1)
			a.v.s.streamSlots.give(a.slots)
			a.done(it.seq, res, err)
		}
	}
}

// done queues the answer of one append; it never blocks (it may run on the
// engine's writer goroutine).
func (a *appendStream) done(seq uint64, res equeue.AppendResult, err error) {
	r := streamOut{seq: seq}
	if err != nil {
		a.v.s.failures.failed(pb.Broker_AppendStream_FullMethodName, status.Code(toStatus(err)), err)
		r.err = pullError(err)
	} else {
		r.res = res
	}
	a.mu.Lock()
	if a.results == nil {
		a.results, a.spare = a.spare, nil
	}
	a.results = append(a.results, r)
	a.mu.Unlock()
	a.kick()
}

func (a *appendStream) kick() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// clientAnswerLimit is the largest answer message the client of the
// AppendStream call ctx receives: what it told (mdMaxAnswerBytes), else
// the default client's.
func clientAnswerLimit(ctx context.Context) int {
	md, _ := metadata.FromIncomingContext(ctx)
	if v := md.Get(mdMaxAnswerBytes); len(v) > 0 {
		if n, err := strconv.Atoi(v[0]); err == nil && n > 0 {
			return n
		}
	}
	return DefaultMaxMessageBytes
}

// send sends results in as few messages as keep within the client's
// limit. A result larger than the limit alone goes alone: the client
// refuses such an append before sending it.
func (a *appendStream) send(results []streamOut) error {
	for len(results) > 0 {
		n, size := 0, 0
		for ; n < len(results); n++ {
			sz := streamResultSize(&results[n])
			if n > 0 && size+sz > a.limit {
				break
			}
			size += sz
		}
		if err := a.st.SendMsg(streamAnswerOut(results[:n])); err != nil {
			return err
		}
		results = results[n:]
	}
	return nil
}

// answer sends the answers as they come, several per message. It returns
// when the client has closed its side and every append read is answered,
// or the call breaks. A stopping server tells the client (draining), so it
// sends no more here and closes its side.
func (a *appendStream) answer() error {
	stopping := a.v.s.stopping.Done()
	var drainTimer <-chan time.Time
	expired := false
	for {
		select {
		case <-a.wake:
		case <-stopping:
			stopping = nil
			a.mu.Lock()
			a.draining = true
			a.mu.Unlock()
			if err := a.st.Send(&pb.AppendStreamResponse{Draining: true}); err != nil {
				return err
			}
		case <-drainTimer:
			expired = true
		}
		a.mu.Lock()
		batch := a.results
		a.results = nil
		a.mu.Unlock()
		// SendMsg encodes the answer before it returns: batch is free then.
		if err := a.send(batch); err != nil {
			return err
		}
		a.mu.Lock()
		if batch != nil {
			clear(batch)
			a.spare = batch[:0]
		}
		a.pending -= len(batch)
		a.space.Broadcast()
		idle, readDone, readErr, draining := a.pending == 0 && len(a.results) == 0, a.readDone, a.readErr, a.draining
		a.mu.Unlock()
		switch {
		case readDone && idle:
			if errors.Is(readErr, io.EOF) {
				if draining {
					return toStatus(errStopping)
				}
				return nil
			}
			return readErr
		case draining && idle && expired:
			// The client did not close its side: end the call.
			return toStatus(errStopping)
		case draining && idle && drainTimer == nil:
			drainTimer = time.After(streamDrainTimeout)
		}
	}
}
