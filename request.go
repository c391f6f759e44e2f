package equeue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ReplyTopicPrefix starts the name of every reply topic. User topic names
// cannot contain '%', so no user topic collides with a reply topic.
const ReplyTopicPrefix = "%REPLY%"

// System properties of request-reply (read them with Message.SysProperty).
const (
	// SysReplyTo names the reply topic a request's reply goes to.
	SysReplyTo = "reply-to"
	// SysCorrelationID ties a reply to its request.
	SysCorrelationID = "correlation-id"
)

// DefaultRequestTimeout bounds Producer.Request when its context has no deadline.
const DefaultRequestTimeout = 30 * time.Second

// replyPullWait is how long the reply listener's pulls wait for a reply.
const replyPullWait = 5 * time.Second

// isReplyTopic reports whether name is a reply topic.
func isReplyTopic(name string) bool {
	rest, ok := strings.CutPrefix(name, ReplyTopicPrefix)
	return ok && ValidateName(rest) == nil
}

// IsReplyTopic reports whether name is a reply topic (ReplyTopicPrefix
// followed by a valid name). Transports use it to let a producer read, and
// a consumer write, reply topics.
func IsReplyTopic(name string) bool { return isReplyTopic(name) }

// replyTopicDeleter is the optional broker capability Producer.Close uses
// to remove its reply topic. *Engine and the remote client implement it.
type replyTopicDeleter interface {
	DeleteReplyTopic(ctx context.Context, name string) error
}

// replyTopicNamer is the optional broker capability that names a
// producer's reply topic. The remote client names it for its token, so
// that its server lets no other produce-only token read or delete it.
type replyTopicNamer interface {
	NewReplyTopicName() string
}

// newReplyTopicName returns a fresh name for the producer's reply topic:
// the broker's when it names them, else a random one.
func (p *Producer) newReplyTopicName() string {
	if n, ok := p.b.(replyTopicNamer); ok {
		if name := n.NewReplyTopicName(); isReplyTopic(name) {
			return name
		}
	}
	return ReplyTopicPrefix + randomID()
}

// requester is a producer's request-reply state: its reply topic, the
// requests waiting for a reply, and the goroutine that reads replies. It is
// started by the first Request and stopped by Producer.Close.
type requester struct {
	p     *Producer
	topic string

	mu      sync.Mutex
	pending map[string]chan *Message // correlation ID -> the waiting request
	stopped bool
	err     error // why it stopped: what waiting requests return
	cancel  context.CancelFunc
	done    chan struct{}

	dropped atomic.Int64 // replies nobody waited for (late or unknown)
}

// requesterState is the Producer's lazily created requester. One Request
// at a time makes its reply topic, a Route that is a network call over
// remote, without holding mu: the others wait for it, or for their own
// context to end.
type requesterState struct {
	mu sync.Mutex
	r  *requester
	// topic is the name of the reply topic to make next. A Route that
	// failed may have made it all the same (over remote, its context can
	// end after the server ran it), so the name is kept until a requester
	// runs on it: the next Route makes it again, which the broker answers
	// with the topic it has, and no reply topic is left behind.
	topic string
	// making is closed when the Route in flight returns; nil when none is.
	making chan struct{}
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// requester returns the producer's requester, starting it on first use:
// the reply topic is created (Route creates reply topics) before the
// listener starts, so no reply can be sent to a topic that does not exist.
// While another Request makes the reply topic it waits for that, until ctx
// ends.
func (p *Producer) requester(ctx context.Context) (*requester, error) {
	for {
		p.req.mu.Lock()
		if p.closed.Load() {
			p.req.mu.Unlock()
			return nil, ErrClosed
		}
		if r := p.req.r; r != nil {
			r.mu.Lock()
			gone := r.stopped
			r.mu.Unlock()
			if !gone {
				p.req.mu.Unlock()
				return r, nil
			}
		}
		making := p.req.making
		if making == nil {
			return p.startRequester(ctx)
		}
		p.req.mu.Unlock()
		select {
		case <-making:
		case <-ctx.Done():
			return nil, fmt.Errorf("equeue: create reply topic: %w", ctx.Err())
		}
	}
}

// startRequester makes the reply topic and starts the requester on it.
// It is called with p.req.mu held and no Route in flight, and releases
// the lock.
func (p *Producer) startRequester(ctx context.Context) (*requester, error) {
	old := p.req.r // stopped: its reply topic was deleted under it
	p.req.r = nil
	if p.req.topic == "" {
		p.req.topic = p.newReplyTopicName()
	}
	topic := p.req.topic
	making := make(chan struct{})
	p.req.making = making
	p.req.mu.Unlock()

	if old != nil {
		old.cancel()
		<-old.done
	}
	_, err := p.b.Route(ctx, topic)

	p.req.mu.Lock()
	defer p.req.mu.Unlock()
	p.req.making = nil
	close(making)
	if err != nil {
		return nil, fmt.Errorf("equeue: create reply topic: %w", err)
	}
	if p.closed.Load() {
		return nil, ErrClosed // Close deletes the topic, still named by p.req.topic
	}
	r := &requester{p: p, topic: topic, pending: map[string]chan *Message{}}
	lctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go r.listen(lctx)
	p.req.r, p.req.topic = r, ""
	return r, nil
}

// stopRequester stops the listener, fails waiting requests with ErrClosed
// and deletes the reply topic when the broker can, one whose Route failed
// too (the broker may have made it). It first waits for a Route in flight;
// once p is closed no other starts. Idempotent.
func (p *Producer) stopRequester() {
	p.req.mu.Lock()
	for p.req.making != nil {
		making := p.req.making
		p.req.mu.Unlock()
		<-making
		p.req.mu.Lock()
	}
	r, topic := p.req.r, p.req.topic
	p.req.mu.Unlock()
	if r != nil {
		r.stop(ErrClosed)
		r.cancel()
		<-r.done
		topic = r.topic
	}
	if topic == "" {
		return
	}
	if d, ok := p.b.(replyTopicDeleter); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = d.DeleteReplyTopic(ctx, topic) // best effort: a leftover reply topic holds only late replies
		cancel()
	}
}

// stop fails the waiting requests with err and refuses new ones.
// Idempotent: the first reason stays.
func (r *requester) stop(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return
	}
	r.stopped, r.err = true, err
	for id, ch := range r.pending {
		close(ch)
		delete(r.pending, id)
	}
}

// listen reads the reply topic and hands each reply to its request. When
// the topic disappears (deleted by an admin) it stops the requester, so
// that waiting requests fail at once and the next one starts afresh.
func (r *requester) listen(ctx context.Context) {
	defer close(r.done)
	var off int64
	backoff := busyBackoffMin
	for ctx.Err() == nil {
		res, err := r.p.b.Pull(ctx, &PullRequest{Topic: r.topic, Offset: off, Max: MaxPullBatch, Wait: replyPullWait})
		if err != nil {
			if ctx.Err() == nil && (errors.Is(err, ErrClosed) || errors.Is(err, ErrTopicNotFound)) {
				r.stop(fmt.Errorf("equeue: reply topic %s: %w", r.topic, err))
				return
			}
			if next, ok := pastTooLarge(err, off); ok {
				// Its request times out; the replies after it go on.
				r.dropped.Add(1)
				off = next
				continue
			}
			if !sleepCtx(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, busyBackoffMax)
			continue
		}
		backoff = busyBackoffMin
		off = res.NextOffset
		for _, m := range res.Messages {
			r.deliver(m)
		}
	}
}

// pastTooLarge returns the offset after the reply at or after off that err
// (from a pull of the reply topic at off) says the requester cannot receive,
// being larger than its remote client accepts, and true. Pulled again, that
// reply would fail the same way for good. Any other error gives false.
func pastTooLarge(err error, off int64) (int64, bool) {
	var big *MessageTooLargeError
	if !errors.As(err, &big) || big.Offset < off {
		return 0, false
	}
	return big.Offset + 1, true
}

// deliver hands m to the request waiting for it, or drops it.
func (r *requester) deliver(m *Message) {
	id := m.SysProperty(SysCorrelationID)
	r.mu.Lock()
	ch, ok := r.pending[id]
	if ok {
		delete(r.pending, id)
	}
	r.mu.Unlock()
	if !ok {
		r.dropped.Add(1)
		return
	}
	ch <- m // buffered, and each channel gets at most one message
}

// add registers a request waiting for a reply.
func (r *requester) add(id string) (chan *Message, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		return nil, r.err
	}
	ch := make(chan *Message, 1)
	r.pending[id] = ch
	return ch, nil
}

// forget removes a request that stopped waiting.
func (r *requester) forget(id string) {
	r.mu.Lock()
	delete(r.pending, id)
	r.mu.Unlock()
}

// Request sends m and waits for its reply: a message a handler sent with
// Reply. m carries the producer's reply topic and a fresh correlation ID
// (system properties SysReplyTo and SysCorrelationID; properties m already
// holds are replaced). Request waits until ctx ends, or
// DefaultRequestTimeout when ctx has no deadline; then it returns an error
// matching ErrRequestTimeout (and the context's error), and a reply that
// arrives later is dropped, as is one larger than a remote client of the
// producer accepts. The request itself may then have been handled
// or not. The error says whether it was stored: it matches
// ErrRequestNotStored too when the context ended before the request was
// stored (sending it again stores it once), ErrIndeterminate when it ended
// with the send in flight (the outcome is unknown, as for Send), and
// neither once the request was stored. A request
// whose ID the topic's dedup window holds is not stored again, and Request
// returns ErrDuplicateRequest at once.
//
// The first Request creates the producer's reply topic and starts one
// goroutine reading it; Close stops it and deletes the topic.
func (p *Producer) Request(ctx context.Context, m *Message) (*Message, error) {
	if err := p.check(ctx, m); err != nil {
		return nil, err
	}
	if m.Delay > 0 || !m.DeliverAt.IsZero() {
		return nil, fmt.Errorf("%w: a request cannot be delayed", ErrInvalidArgument)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultRequestTimeout)
		defer cancel()
	}
	r, err := p.requester(ctx)
	if err != nil {
		if requestEnded(ctx) {
			return nil, fmt.Errorf("%w: %w: %w", ErrRequestTimeout, ErrRequestNotStored, err)
		}
		return nil, err
	}
	id := randomID()
	ch, err := r.add(id)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRequestNotStored, err)
	}
	sys := m.SysProperties()
	if sys == nil {
		sys = map[string]string{}
	}
	sys[SysReplyTo], sys[SysCorrelationID] = r.topic, id
	m.SetSysProperties(sys)
	res, err := p.Send(ctx, m)
	if err != nil {
		r.forget(id)
		if requestEnded(ctx) {
			if errors.Is(err, ErrIndeterminate) {
				return nil, fmt.Errorf("%w: sending the request: %w", ErrRequestTimeout, err)
			}
			// A send error other than ErrIndeterminate stored nothing.
			return nil, fmt.Errorf("%w: %w: sending the request: %w", ErrRequestTimeout, ErrRequestNotStored, err)
		}
		return nil, err
	}
	if res.Duplicate {
		// The stored request carries another correlation ID: the reply
		// goes to the request first sent with this ID.
		r.forget(id)
		return nil, fmt.Errorf("%w: topic %s holds message ID %s", ErrDuplicateRequest, m.Topic, m.ID)
	}
	select {
	case rep, ok := <-ch:
		if !ok {
			r.mu.Lock()
			err := r.err
			r.mu.Unlock()
			return nil, err
		}
		return rep, nil
	case <-ctx.Done():
		r.forget(id)
		// A reply may have been handed over just before forget.
		select {
		case rep, ok := <-ch:
			if ok {
				return rep, nil
			}
		default:
		}
		return nil, fmt.Errorf("%w: %w", ErrRequestTimeout, ctx.Err())
	}
}

// requestEnded reports whether a request's context ended: its Err is set,
// or its deadline has passed. A deadline passes a moment before the
// context's timer sets Err, and a call that looks at the deadline itself
// fails in that moment (over remote, gRPC sends what is left of it and the
// broker answers DeadlineExceeded at once): such a request timed out too.
func requestEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// Reply sends body as the reply to req, a message received by a handler
// that was sent with Producer.Request. The reply goes to the requester's
// reply topic with req's correlation ID; props, which may be nil, become
// its Properties. It returns ErrNotRequest when req carries no reply
// address. A reply nobody can receive is dropped, and Reply returns nil:
// the requester stopped waiting (it drops the reply), or it closed and its
// reply topic is gone (retrying would not help a handler either).
//
// Across namespaces: p on the engine answers a requester on a Namespace
// whose request it consumed under the qualified name ("tenant:rpc"). p on
// that Namespace answers it too, whether the request was consumed through
// the view or on the engine, whose reply address ("%REPLY%tenant:<id>")
// the view knows as its own. A view reaches nothing outside its
// namespace: p on a Namespace returns ErrOutsideNamespace for a reply
// address of another namespace ("%REPLY%other:<id>"), and takes an
// unqualified one ("%REPLY%<id>") as its namespace's, so it cannot answer
// a requester of the default namespace that sent to one of the view's
// topics: that reply is dropped like one to a closed requester, and the
// request times out.
func Reply(ctx context.Context, p *Producer, req *Message, body []byte, props map[string]string) error {
	if p == nil || req == nil {
		return fmt.Errorf("%w: nil producer or request", ErrInvalidArgument)
	}
	if p.closed.Load() {
		return ErrClosed
	}
	to, id := req.SysProperty(SysReplyTo), req.SysProperty(SysCorrelationID)
	if !isReplyTopic(to) || id == "" {
		return fmt.Errorf("%w: message %s", ErrNotRequest, req.ID)
	}
	send := func(to string) error {
		m := &Message{Topic: to, Body: body, Properties: props}
		m.SetSysProperties(map[string]string{SysCorrelationID: id})
		// Reply topics have one queue; a requester that closed deleted it.
		_, err := p.append(ctx, &AppendRequest{Topic: to, Queue: 0, Messages: []*Message{m}, Sync: p.sync})
		return err
	}
	err := send(to)
	if errors.Is(err, ErrTopicNotFound) {
		// A request a requester on a Namespace sent before views
		// qualified reply addresses (namespace.go) names its reply topic
		// as the namespace does; a service consuming the topic on the
		// engine itself, which sees it qualified ("tenant:rpc"), finds
		// the reply topic under the qualified name. Reply topic names
		// are random, so at most one of the two exists. An address that
		// is qualified already is not qualified again.
		if prefix := namespacePrefixOf(req.Topic); prefix != "" && namespacePrefixOf(to) == "" {
			err = send(qualify(prefix, to))
		}
	}
	if errors.Is(err, ErrTopicNotFound) {
		return nil // the requester closed: nobody to answer
	}
	return err
}

// namespacePrefixOf returns the namespace prefix ("tenant:") of an engine
// topic name ("tenant:rpc", "%RETRY%tenant:g"), or "" for a name of the
// default namespace.
func namespacePrefixOf(name string) string {
	for _, p := range []string{RetryTopicPrefix, DLQTopicPrefix, ReplyTopicPrefix} {
		if rest, ok := strings.CutPrefix(name, p); ok {
			name = rest
			break
		}
	}
	if ns, _, ok := strings.Cut(name, NamespaceSeparator); ok {
		return ns + NamespaceSeparator
	}
	return ""
}

// Errors of request-reply.
var (
	// ErrRequestTimeout is returned by Producer.Request when no reply
	// arrived before its context ended (or DefaultRequestTimeout passed).
	ErrRequestTimeout = errors.New("equeue: request timed out")
	// ErrNotRequest is returned by Reply when the message was not sent with
	// Producer.Request (it has no reply address).
	ErrNotRequest = errors.New("equeue: message is not a request")
	// ErrDuplicateRequest is returned by Producer.Request when the
	// request's topic has a dedup window that holds its ID: the request was
	// not stored again, so no handler answers it.
	ErrDuplicateRequest = errors.New("equeue: request is a duplicate")
	// ErrRequestNotStored is matched by the error of a Producer.Request
	// that did not store its request: its context ended first (the error
	// matches ErrRequestTimeout too), or its requester stopped (its reply
	// topic was deleted, or the producer closed). Nothing will answer it;
	// sending it again stores it once.
	ErrRequestNotStored = errors.New("equeue: request not stored")
)

// ensureReplyTopic creates the reply topic name (one queue) when it is one
// and does not exist. Only Route creates reply topics: an Append to a
// deleted one fails, so a late reply cannot bring it back.
func (e *Engine) ensureReplyTopic(ctx context.Context, name string) error {
	if !isReplyTopic(name) {
		return nil
	}
	if _, ok := e.lookupTopic(name); ok {
		return nil
	}
	err := e.createTopic(ctx, name, TopicOptions{Queues: 1}, true)
	if errors.Is(err, ErrTopicExists) {
		return nil
	}
	return err
}

// DeleteReplyTopic deletes a reply topic (Producer.Close calls it through
// the broker). It returns ErrInvalidName for any other topic.
//
// Broker seam: producers call it; applications need not.
func (e *Engine) DeleteReplyTopic(ctx context.Context, name string) error {
	if !isReplyTopic(name) {
		return fmt.Errorf("%w: %q is not a reply topic", ErrInvalidName, name)
	}
	return e.DeleteTopic(ctx, name)
}
