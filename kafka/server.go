package kafka

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/equeue-go/equeue"
)

// Broker is what the listener needs from an engine: the producer and
// consumer seam plus the topic administration and the offsets of groups the
// listener coordinates. *equeue.Engine implements it.
type Broker interface {
	equeue.Broker
	// CreateTopic creates a topic (CreateTopics).
	CreateTopic(ctx context.Context, name string, queues int) error
	// AddQueues grows a topic (CreatePartitions).
	AddQueues(ctx context.Context, name string, n int) error
	// DeleteTopic deletes a topic (DeleteTopics).
	DeleteTopic(ctx context.Context, name string) error
	// Topics lists the topics (Metadata).
	Topics(ctx context.Context) ([]equeue.TopicInfo, error)
	// Topic describes one topic (Metadata, ListOffsets).
	Topic(ctx context.Context, name string) (equeue.TopicInfo, error)
	// CommitGroupOffsets stores a Kafka-protocol group's offsets (OffsetCommit).
	CommitGroupOffsets(ctx context.Context, group string, offsets map[equeue.QueueRef]int64) error
	// GroupOffsets returns a Kafka-protocol group's offsets (OffsetFetch).
	GroupOffsets(ctx context.Context, group string) (map[equeue.QueueRef]int64, error)
	// KeepGroup says a Kafka-protocol group has live members, so that
	// equeue.Options.GroupIdleTTL keeps its offsets while it commits
	// nothing (see equeue.Engine.KeepGroup).
	KeepGroup(ctx context.Context, group string) error
}

// waiter is the optional capability of waiting on many queues at once
// (equeue.Engine.WaitAny); without it a fetch long-polls its first partition.
type waiter interface {
	WaitAny(ctx context.Context, pulls []*equeue.PullRequest, wait time.Duration) error
}

var (
	_ Broker = (*equeue.Engine)(nil)
	_ Broker = (*equeue.Namespace)(nil)
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// AdvertisedAddr is the host:port Metadata gives clients for this
	// broker. Empty means the local address of the connection the request
	// came on, which is right unless clients go through a proxy or NAT.
	AdvertisedAddr string
	// TLS, when set, serves TLS only.
	TLS *tls.Config
	// Tokens, when not empty, require SASL/PLAIN authentication: the
	// password is a token, the user name is free, and the token's rights
	// apply as for gRPC (produce: Produce and InitProducerId; consume:
	// Fetch, groups and offsets; admin: topic and group administration).
	// Metadata, ListOffsets and FindCoordinator need any right. Every
	// token here reaches all the listener's Broker serves: leave out tokens
	// the gRPC server scopes to a namespace
	// (remote.ServerOptions.TokenNamespaces), or serve each namespace from
	// a listener of its own over its Namespace view (equeue serve does
	// the first).
	Tokens map[string]Rights
	// TagHeader names the record header that carries a message's tag: on
	// produce its value becomes the tag (and is not kept as a property), on
	// fetch the tag is sent in it. Empty means DefaultTagHeader.
	TagHeader string
	// LogAppendTime, when true, gives fetched records the time the engine
	// stored them (LogAppendTime), and a produce answer that time of its
	// records, as a broker whose topics use LogAppendTime; false gives the
	// producer's timestamp (CreateTime).
	LogAppendTime bool
	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// group member may ask for. Zero means 1 s and 5 min.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// ConsumerSessionTimeout is how long a member of a KIP-848 consumer
	// group (ConsumerGroupHeartbeat) may go without a heartbeat before it
	// is dropped, and ConsumerHeartbeatInterval how often it is told to
	// heartbeat. Zero means 45 s and 5 s (Kafka's defaults).
	ConsumerSessionTimeout, ConsumerHeartbeatInterval time.Duration
	// MaxInflating is how many compressed record batches the listener
	// decompresses at once, over all its connections; each may inflate
	// to 100 MiB before its size is known. With MaxInflatedBytes it
	// bounds the memory compressed produce requests take whatever clients
	// send. A batch that must wait longer than its request's timeout is
	// answered REQUEST_TIMED_OUT, which clients retry. Zero means 2;
	// uncompressed batches are not counted.
	MaxInflating int
	// MaxInflatedBytes bounds the inflated records of compressed batches
	// the listener holds until they are stored, over all its connections
	// (a batch larger than it waits for all of it). Zero means 256 MiB.
	MaxInflatedBytes int64
	// MaxQueuedRequestBytes bounds the request frames the listener holds,
	// read and not yet answered, over all its connections (Kafka's
	// queued.max.request.bytes): a connection waits, without reading the
	// frame, until its size fits (a frame larger than it waits for all of
	// it, so it is read alone). Each frame may be up to 100 MiB. Zero
	// means 256 MiB.
	MaxQueuedRequestBytes int64
	// MaxConnections bounds the connections the listener serves at once
	// (Kafka's max.connections): one accepted past it is closed at once.
	// Zero means no bound.
	MaxConnections int
	// RequestReadTimeout bounds the wait for each 64 KiB of a request
	// frame's body (once its size was read and its bytes of
	// MaxQueuedRequestBytes reserved) and for the client to take each
	// 64 KiB of a response: a client that stops sending a body, or
	// trickles it slower than that, or that stops reading an answer, has
	// its connection closed, and the request's bytes given back, so it
	// cannot hold the budget every connection shares; a client on a slow
	// but moving link is not cut off. Zero means 30 s.
	RequestReadTimeout time.Duration
	// ConnectionsMaxIdle closes a connection that sent no request for
	// that long since its last answer (or since it was accepted), as
	// Kafka's connections.max.idle.ms does. Zero means 10 minutes.
	ConnectionsMaxIdle time.Duration
	// ProducerRecordKey keys the mark that ends the message ID of each
	// record an idempotent producer stores (see the README's Kafka
	// clients), by which the listener, after a restart, reads back its
	// own records only: a native producer's message given an ID of that
	// form does not move the producer's state. Empty means a key built
	// in, which keeps out IDs given by chance but not one made on
	// purpose by a native producer that knows the form; set a secret to
	// keep those out too, the same across restarts and on every node of
	// a cluster: records marked under another key are not read back,
	// except those marked with the built-in key, which a listener given
	// a key reads as it reads records stored before marks (below the
	// partition's first record marked with the key), so that retries
	// across the restart that sets a key are not stored twice.
	ProducerRecordKey []byte
	// Logger receives the listener's logs. Nil means silent.
	Logger *slog.Logger
}

// DefaultTagHeader is the header that carries a message's tag by default.
const DefaultTagHeader = "equeue-tag"

// ErrServerClosed is returned by Serve when the server was closed.
var ErrServerClosed = errors.New("kafka: server closed")

// Server serves the Kafka wire protocol over a Broker. Its methods are safe
// for concurrent use; Close it when done.
type Server struct {
	b      Broker
	node   ClusterNode // b, when it is one node of a cluster (leader.go)
	o      Options
	log    *slog.Logger
	tokens map[[sha256.Size]byte]Rights
	groups *coordinator
	pids   *producers
	// marks marks and checks idempotent producers' records (Options.ProducerRecordKey).
	marks recordMarks
	// inflate bounds the memory compressed batches take.
	inflate *inflateGate
	// queued bounds the memory request frames take (queued.go).
	queued *byteBudget
	// handling, when set (tests), is called before each request is
	// handled.
	handling func()
	maxTS    *maxTimestamps // what MAX_TIMESTAMP scans learned (maxtimestamp.go)
	ids      topicNames     // the topics' names by Kafka ID (topicids.go)
	topicIDs topicIDCache   // the topics' equeue IDs by name (topicidcache.go)
	// partsMu guards parts, the produce locks of the partitions a batch
	// is being stored to (see appendBatch and partLock).
	partsMu sync.Mutex
	parts   map[equeue.QueueRef]*partLock

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	// cancelled is closed once Close cancelled ctx, and with it every
	// connection's context (ctx's Done is closed before its children are
	// cancelled).
	cancelled chan struct{}
	mu        sync.Mutex
	lis       map[net.Listener]struct{}
	conns     map[net.Conn]struct{}
	closed    bool
	wg        sync.WaitGroup
	// refused counts the connections closed past Options.MaxConnections
	// since refusedLogged, when refuseConn last logged.
	refused       int
	refusedLogged time.Time
	// noKafkaLeader is the last leader warned about (warnNoKafkaLeader).
	noKafkaLeader string
}

// NewServer returns a server over b. It returns equeue.ErrInvalidArgument for
// a nil broker and equeue.ErrInvalidOptions for bad options.
func NewServer(b Broker, opts *Options) (*Server, error) {
	if b == nil {
		return nil, fmt.Errorf("%w: nil broker", equeue.ErrInvalidArgument)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TagHeader == "" {
		o.TagHeader = DefaultTagHeader
	}
	if o.MinSessionTimeout == 0 {
		o.MinSessionTimeout = time.Second
	}
	if o.MaxSessionTimeout == 0 {
		o.MaxSessionTimeout = 5 * time.Minute
	}
	if o.ConsumerSessionTimeout == 0 {
		o.ConsumerSessionTimeout = defaultConsumerSession
	}
	if o.ConsumerHeartbeatInterval == 0 {
		o.ConsumerHeartbeatInterval = defaultConsumerInterval
	}
	if o.ConsumerSessionTimeout < 0 || o.ConsumerHeartbeatInterval < 0 || o.ConsumerHeartbeatInterval >= o.ConsumerSessionTimeout {
		return nil, fmt.Errorf("%w: consumer group heartbeat interval %v, session timeout %v", equeue.ErrInvalidOptions, o.ConsumerHeartbeatInterval, o.ConsumerSessionTimeout)
	}
	if o.MaxInflating == 0 {
		o.MaxInflating = defaultMaxInflating
	}
	if o.MaxInflatedBytes == 0 {
		o.MaxInflatedBytes = defaultInflatedBudget
	}
	if o.MaxInflatedBytes < 0 {
		return nil, fmt.Errorf("%w: max inflated bytes %d", equeue.ErrInvalidOptions, o.MaxInflatedBytes)
	}
	if o.MaxQueuedRequestBytes == 0 {
		o.MaxQueuedRequestBytes = defaultQueuedBudget
	}
	if o.MaxQueuedRequestBytes < 0 {
		return nil, fmt.Errorf("%w: max queued request bytes %d", equeue.ErrInvalidOptions, o.MaxQueuedRequestBytes)
	}
	if o.RequestReadTimeout == 0 {
		o.RequestReadTimeout = defaultRequestReadTimeout
	}
	if o.RequestReadTimeout < 0 {
		return nil, fmt.Errorf("%w: request read timeout %v", equeue.ErrInvalidOptions, o.RequestReadTimeout)
	}
	if o.ConnectionsMaxIdle == 0 {
		o.ConnectionsMaxIdle = defaultConnectionsMaxIdle
	}
	if o.ConnectionsMaxIdle < 0 {
		return nil, fmt.Errorf("%w: connections max idle %v", equeue.ErrInvalidOptions, o.ConnectionsMaxIdle)
	}
	if o.MaxConnections < 0 {
		return nil, fmt.Errorf("%w: max connections %d", equeue.ErrInvalidOptions, o.MaxConnections)
	}
	if o.MaxInflating < 0 {
		return nil, fmt.Errorf("%w: max inflating %d", equeue.ErrInvalidOptions, o.MaxInflating)
	}
	if o.MinSessionTimeout < 0 || o.MaxSessionTimeout < o.MinSessionTimeout {
		return nil, fmt.Errorf("%w: session timeout bounds %v..%v", equeue.ErrInvalidOptions, o.MinSessionTimeout, o.MaxSessionTimeout)
	}
	if o.AdvertisedAddr != "" {
		if err := checkAdvertised(o.AdvertisedAddr); err != nil {
			return nil, fmt.Errorf("%w: advertised address: %v", equeue.ErrInvalidOptions, err)
		}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{b: b, o: o, log: log, lis: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}, pids: newProducers(), marks: newRecordMarks(o.ProducerRecordKey), maxTS: newMaxTimestamps(), inflate: newInflateGate(o.MaxInflating, o.MaxInflatedBytes), queued: newQueuedBudget(o.MaxQueuedRequestBytes), parts: map[equeue.QueueRef]*partLock{}}
	s.node, _ = b.(ClusterNode)
	if len(o.Tokens) > 0 {
		s.tokens = make(map[[sha256.Size]byte]Rights, len(o.Tokens))
		for tok, r := range o.Tokens {
			if tok == "" {
				return nil, fmt.Errorf("%w: empty token", equeue.ErrInvalidOptions)
			}
			s.tokens[sha256.Sum256([]byte(tok))] = r
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.cancelled = make(chan struct{})
	s.groups = newCoordinator(s)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.groups.run(s.ctx)
	}()
	return s, nil
}

// Serve accepts connections on lis until Close; it returns ErrServerClosed
// then, or the accept error that stopped it. With Options.TLS the
// connections are served over TLS.
func (s *Server) Serve(lis net.Listener) error {
	if s.o.TLS != nil {
		lis = tls.NewListener(lis, s.o.TLS)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = lis.Close()
		return ErrServerClosed
	}
	s.lis[lis] = struct{}{}
	s.wg.Add(1)
	s.mu.Unlock()
	defer s.wg.Done()
	for {
		nc, err := lis.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			delete(s.lis, lis)
			s.mu.Unlock()
			if closed {
				return ErrServerClosed
			}
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			_ = nc.Close()
			continue
		}
		if s.o.MaxConnections > 0 && len(s.conns) >= s.o.MaxConnections {
			refused := s.countRefused()
			s.mu.Unlock()
			s.refuseConn(nc, refused)
			continue
		}
		s.conns[nc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			newConn(s, nc).serve()
			s.mu.Lock()
			delete(s.conns, nc)
			s.mu.Unlock()
		}()
	}
}

// Close stops the listeners, closes every connection, ends group
// coordination and waits for every goroutine the server started. Appends
// in flight are not cancelled but waited for (30 s at most), and none
// starts after, so that what a listener started after Close reads back
// is settled. It is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.wg.Wait()
		return nil
	}
	s.closed = true
	var errs []error
	for l := range s.lis {
		if err := l.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.cancel()
	close(s.cancelled)
	s.wg.Wait()
	return errors.Join(errs...)
}

// countRefused counts a connection refused past Options.MaxConnections
// and returns how many were since the last log line, or 0 when this one
// is not to be logged: a line at most every refusedLogEvery, so a flood
// of connections does not flood the log. Call it with s.mu held.
func (s *Server) countRefused() int {
	s.refused++
	now := time.Now()
	if now.Sub(s.refusedLogged) < refusedLogEvery {
		return 0
	}
	n := s.refused
	s.refused, s.refusedLogged = 0, now
	return n
}

// refuseConn closes nc, accepted past Options.MaxConnections, and logs it
// when refused (countRefused) is not 0.
func (s *Server) refuseConn(nc net.Conn, refused int) {
	if refused > 0 {
		s.log.Warn("kafka: too many connections; closing new ones", "max", s.o.MaxConnections, "refused", refused, "remote", nc.RemoteAddr().String())
	}
	_ = nc.Close()
}

// refusedLogEvery is how often refuseConn logs at most.
const refusedLogEvery = time.Minute

// rightsOf returns the rights of a SASL/PLAIN password, and whether it is a token.
func (s *Server) rightsOf(token string) (Rights, bool) {
	r, ok := s.tokens[sha256.Sum256([]byte(token))]
	return r, ok
}

// partLock is the produce lock of a partition (see appendBatch), kept in
// Server.parts while refs, the batches holding or waiting for it, is not 0.
type partLock struct {
	sync.RWMutex
	ref  equeue.QueueRef
	refs int // guarded by Server.partsMu
}

// acquirePart returns the produce lock of a partition, kept for the caller
// until it passes it to releasePart. A lock is kept only while a batch
// needs it, so partitions and topics named by produce requests, whether
// they exist or not, leave nothing behind.
func (s *Server) acquirePart(topic string, part int32) *partLock {
	ref := equeue.QueueRef{Topic: topic, Queue: int(part)}
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	l := s.parts[ref]
	if l == nil {
		l = &partLock{ref: ref}
		s.parts[ref] = l
	}
	l.refs++
	return l
}

// releasePart gives back a lock of acquirePart, forgetting it when no
// other batch needs it.
func (s *Server) releasePart(l *partLock) {
	s.partsMu.Lock()
	defer s.partsMu.Unlock()
	if l.refs--; l.refs == 0 {
		delete(s.parts, l.ref)
	}
}
