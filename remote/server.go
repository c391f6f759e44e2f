package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// Defaults of ServerOptions and ClientOptions.
const (
	// DefaultMaxMessageBytes is the largest gRPC message accepted: room for
	// an 8 MiB request or pull answer plus framing.
	DefaultMaxMessageBytes = 8<<20 + 64<<10
	// DefaultMaxMetadataBytes is the largest metadata (gRPC headers: the
	// token, trace context...) a call may carry: gRPC's own default, 16
	// MiB, would let every call hold that much for as long as it lasts.
	DefaultMaxMetadataBytes = 64 << 10
	// DefaultMaxInFlight is how many calls a server runs at once.
	DefaultMaxInFlight = 1024
	// DefaultMaxLongPolls is how many long-polls a server holds at once:
	// at about 13 KiB each, some 200 MiB when all are held, plus their
	// requests (DefaultMaxLongPollBytes); a consumer holds two (its
	// client's one PullMany and its heartbeat).
	DefaultMaxLongPolls = 1 << 14
	// DefaultMaxAppendStreams is how many AppendStream calls a server
	// holds at once.
	DefaultMaxAppendStreams = 4096
	// DefaultGracefulStopTimeout is how long GracefulStop waits for the
	// calls in progress before it ends them as Stop does.
	DefaultGracefulStopTimeout = 30 * time.Second
)

// ServerOptions configure a Server. A nil *ServerOptions, and every zero
// field, means the documented default.
type ServerOptions struct {
	// TLS, when set, serves TLS with its certificates; set ClientAuth (and
	// ClientCAs) for mutual TLS. Nil means plaintext.
	TLS *tls.Config
	// Tokens maps bearer tokens to their rights. A call must carry
	// "authorization: Bearer <token>" metadata with a token that has the
	// call's right (see Rights); the scheme is case-insensitive ("bearer"
	// works as "Bearer"). Nil or empty means no authentication. The
	// health and reflection services are open to all.
	Tokens map[string]Rights
	// TokenNamespaces scopes tokens of Tokens to a namespace (see
	// equeue.Engine.Namespace): every call carrying such a token is served
	// by that namespace's view, so it names, sees and changes only the
	// namespace's topics, groups and offsets. Tokens not listed reach the
	// whole engine, every namespace included. Nil means none is scoped.
	TokenNamespaces map[string]string
	// MaxMessageBytes is the largest encoded request the server accepts, so
	// it bounds the total size of one Append batch; larger requests fail
	// with ResourceExhausted (equeue.ErrMessageTooLarge on the client). Keep
	// it above the engine's MaxMessageSize. Zero means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxMetadataBytes is the largest metadata a call may carry, counted
	// as gRPC counts a header list (each name and value, plus 32 bytes a
	// field). A call over it is refused before it reaches the service
	// (the client sees codes.Internal, "header list size … violates the
	// maximum size … set by server", or the stream reset), and the
	// connection serves on. Zero means DefaultMaxMetadataBytes.
	MaxMetadataBytes int
	// MaxInFlight is how many Broker calls other than long-polls run at
	// once; calls beyond it fail at once with ResourceExhausted (ErrBusy on
	// the client, which retries it). Waiting consumers never count against
	// it. Zero means DefaultMaxInFlight.
	MaxInFlight int
	// MaxInFlightPerConn is how many of MaxInFlight one client
	// connection's unary calls (sends, commits, heartbeats without a wait,
	// admin calls...) hold at once, so that one connection cannot take
	// every place and get other clients' calls refused. One beyond it is
	// refused at once with ResourceExhausted (ErrBusy, "this connection
	// holds …", which the client retries), however many places others
	// left. It is apart from MaxStreamAppendsPerConn, the share of the
	// connection's stream appends. Connections are told apart as for
	// MaxLongPollsPerConn (calls on other transports are bounded by
	// MaxInFlight alone). Zero means half of MaxInFlight, rounded up;
	// MaxInFlight or more lets one connection take it all.
	MaxInFlightPerConn int
	// MaxLongPolls is how many long-polls (Pull and Heartbeat with a wait)
	// are held at once, apart from MaxInFlight; beyond it they fail with
	// ResourceExhausted like other calls. Zero means DefaultMaxLongPolls.
	// Each costs the server a goroutine and about 13 KiB however long it
	// waits (BenchmarkServerCost), so the default's 16,384 can hold about
	// 200 MiB, plus their requests, which MaxLongPollBytes bounds.
	MaxLongPolls int
	// MaxLongPollsPerConn is how many of MaxLongPolls one client connection
	// holds at once, so that one connection cannot take every place and get
	// other clients' long-polls refused. One beyond it is refused at once
	// with ResourceExhausted (ErrBusy, "this connection holds …"), however
	// many places others left. A Client's consumers hold one long-poll for
	// all their pulls (up to 4,096) plus one heartbeat each. Connections are
	// told apart by the client's TCP address; calls on other transports
	// (Unix sockets) are bounded by MaxLongPolls alone, and so are all
	// calls when it is MaxLongPolls or more. Zero means half of
	// MaxLongPolls, rounded up, and at least 2 (a consumer's pull and
	// heartbeat): with a proxy that carries many clients on one connection,
	// raise it.
	MaxLongPollsPerConn int
	// MaxLongPollBytes bounds the bytes of the requests that held
	// long-polls keep (counted as encoded): a PullMany of many pulls with
	// long filters keeps up to MaxMessageBytes for as long as it waits.
	// One connection's held long-polls keep at most half of it (and at
	// least MaxMessageBytes). A long-poll past either is refused at once
	// with ResourceExhausted (ErrBusy, which the client retries), however
	// few long-polls are held. Zero means DefaultMaxLongPollBytes; it is
	// raised to MaxMessageBytes when smaller.
	MaxLongPollBytes int64
	// MaxAppendStreams is how many AppendStream calls (each Client that
	// sent holds one, for its life) are open at once, from every
	// connection together; each costs the server two goroutines and its
	// buffers however idle it is. One beyond it is refused at once with
	// ResourceExhausted (ErrBusy on the client, whose appends then go as
	// unary Append calls, within MaxInFlight, until a stream opens again).
	// Zero means DefaultMaxAppendStreams.
	MaxAppendStreams int
	// MaxAppendStreamsPerConn is how many of MaxAppendStreams one client
	// connection holds at once (a Client holds one), as
	// MaxLongPollsPerConn is for long-polls: one beyond it is refused as
	// busy, and that client appends with unary calls meanwhile. Zero means
	// half of MaxAppendStreams, rounded up.
	MaxAppendStreamsPerConn int
	// MaxStreamAppendsPerConn is how many of MaxInFlight the appends of one
	// client connection's AppendStream calls hold at once. A Client may
	// have up to MaxInFlight appends unanswered on its stream, each holding
	// a place while the store writes it, so with a slow store one producer
	// would take every place and get every other client's calls refused as
	// busy. Appends past the share are not refused: they wait in their
	// stream until one of the connection's appends is done. Connections
	// are told apart as for MaxLongPollsPerConn (calls on other transports
	// are bounded by MaxInFlight alone). Zero means half of MaxInFlight,
	// rounded up; MaxInFlight or more lets one connection take it all.
	MaxStreamAppendsPerConn int
	// GracefulStopTimeout bounds GracefulStop: calls still running that
	// long after it began (an AppendStream whose client stopped reading its
	// answers, its connection alive, holds GracefulStop until then) are
	// ended as by Stop. Zero means DefaultGracefulStopTimeout; negative
	// means GracefulStop waits for every call however long it takes.
	GracefulStopTimeout time.Duration
	// Logger receives the server's logs. Nil means silent.
	Logger *slog.Logger
}

// Server serves an engine over gRPC: the equeue.v1.Broker service, the
// standard health service and server reflection (so grpcurl works). It does
// not own the engine: close the engine after stopping the server.
type Server struct {
	e           Backend
	grpc        *grpc.Server
	health      *health.Server
	svc         *service
	spaces      map[string]*service // by namespace, for scoped tokens
	desc        grpc.ServiceDesc    // registered by Register
	tokens      tokenTable
	maxInFlight int64
	inFlight    atomic.Int64
	callShare   *connShare // what one connection's unary calls may hold of maxInFlight
	// Long-polls are bounded apart, so idle consumers never crowd out producers.
	maxLongPolls    int64
	longPolls       atomic.Int64
	maxStreams      int64 // AppendStream calls
	streams         atomic.Int64
	longPollShare   *connShare   // what one connection may hold of maxLongPolls
	longPollBytes   *heldBytes   // the bytes of the requests held long-polls keep
	streamShare     *connShare   // and of maxStreams
	streamSlots     *streamSlots // what one connection's stream appends may hold of maxInFlight
	maxMessageBytes int
	// maxMetadataBytes is ServerOptions.MaxMetadataBytes, capped to gRPC's uint32.
	maxMetadataBytes uint32
	stopTimeout      time.Duration // of GracefulStop; negative: none
	log              *slog.Logger
	refusals         *refusalLog
	failures         *failureLog

	// stopping is cancelled by Stop and GracefulStop to end long-polls.
	stopping context.Context
	stop     context.CancelFunc
}

// errStopping ends long-polls when the server stops; the client retries.
var errStopping = fmt.Errorf("%w: server stopping", ErrUnavailable)

// NewServer returns a server for e. Call Serve to accept connections.
func NewServer(e *equeue.Engine, opts *ServerOptions) (*Server, error) {
	if e == nil {
		return nil, fmt.Errorf("%w: nil engine", equeue.ErrInvalidArgument)
	}
	return newServer(e, opts)
}

func newServer(e Backend, opts *ServerOptions) (*Server, error) {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.MaxMetadataBytes < 0 {
		return nil, fmt.Errorf("%w: negative MaxMetadataBytes", equeue.ErrInvalidOptions)
	}
	if o.MaxMetadataBytes == 0 {
		o.MaxMetadataBytes = DefaultMaxMetadataBytes
	}
	if o.MaxMessageBytes < 0 || o.MaxInFlight < 0 || o.MaxLongPolls < 0 || o.MaxAppendStreams < 0 ||
		o.MaxInFlightPerConn < 0 || o.MaxLongPollsPerConn < 0 || o.MaxAppendStreamsPerConn < 0 || o.MaxStreamAppendsPerConn < 0 || o.MaxLongPollBytes < 0 {
		return nil, fmt.Errorf("%w: negative MaxMessageBytes, MaxInFlight, MaxLongPolls, MaxLongPollBytes, MaxAppendStreams or a PerConn", equeue.ErrInvalidOptions)
	}
	if o.MaxLongPollBytes == 0 {
		o.MaxLongPollBytes = DefaultMaxLongPollBytes
	}
	if o.MaxAppendStreams == 0 {
		o.MaxAppendStreams = DefaultMaxAppendStreams
	}
	if o.MaxLongPolls == 0 {
		o.MaxLongPolls = DefaultMaxLongPolls
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	if o.GracefulStopTimeout == 0 {
		o.GracefulStopTimeout = DefaultGracefulStopTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	tokens, err := newTokenTable(o.Tokens, o.TokenNamespaces)
	if err != nil {
		return nil, err
	}
	s := &Server{e: e, tokens: tokens, maxInFlight: int64(o.MaxInFlight), maxLongPolls: int64(o.MaxLongPolls),
		maxStreams:      int64(o.MaxAppendStreams),
		callShare:       newConnShare(int64(o.MaxInFlight), o.MaxInFlightPerConn, 1, "calls", "MaxInFlightPerConn"),
		longPollShare:   newConnShare(int64(o.MaxLongPolls), o.MaxLongPollsPerConn, 2, "long-polls", "MaxLongPollsPerConn"),
		longPollBytes:   newHeldBytes(o.MaxLongPollBytes, o.MaxMessageBytes),
		streamShare:     newConnShare(int64(o.MaxAppendStreams), o.MaxAppendStreamsPerConn, 1, "append streams", "MaxAppendStreamsPerConn"),
		streamSlots:     newStreamSlots(int64(o.MaxInFlight), o.MaxStreamAppendsPerConn),
		maxMessageBytes: o.MaxMessageBytes, maxMetadataBytes: uint32(min(int64(o.MaxMetadataBytes), math.MaxUint32)), stopTimeout: o.GracefulStopTimeout, log: o.Logger, refusals: newRefusalLog(o.Logger), failures: newFailureLog(o.Logger), health: health.NewServer()}
	s.svc = newService(e, s)
	if s.spaces, err = s.namespaceServices(o.TokenNamespaces); err != nil {
		return nil, err
	}
	s.stopping, s.stop = context.WithCancel(context.Background())
	s.desc = s.serviceDesc()

	gopts := append(s.GRPCServerOptions(),
		experimental.BufferPool(bufferPool),
		grpc.NumStreamWorkers(streamWorkers()),
	)
	if o.TLS != nil {
		gopts = append(gopts, grpc.Creds(credentials.NewTLS(o.TLS)))
	}
	s.grpc = grpc.NewServer(gopts...)
	s.Register(s.grpc)
	// Health and reflection decode their requests as the Broker service
	// does: one that does not decode is InvalidArgument (malformed.go).
	own := requestServer{s.grpc}
	s.health.SetServingStatus(pb.Broker_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(own, s.health)
	reflection.Register(own)
	return s, nil
}

// GRPCServerOptions are the options of s's own gRPC server that the
// Broker service relies on, for a gRPC server of the application's that
// it is added to with Register: pass them to grpc.NewServer (with the
// application's own, TLS credentials included). They are
//
//   - this package's protobuf codec (grpc.ForceServerCodecV2), which
//     leaves a request that does not decode to the method, to answer
//     InvalidArgument ("malformed request") rather than gRPC's Internal.
//     It is the codec of every service of the server, on the same wire
//     as gRPC's own protobuf codec: leave the server without it only if
//     its services need a codec of their own, and then gRPC answers such
//     a request Internal;
//   - the bound of one connection's concurrent streams (its shares of
//     MaxInFlight, MaxLongPolls and MaxAppendStreams, see
//     TestServer_ConnectionStreamsAreBounded): without it one connection
//     may hold any number of streams that wait for their request;
//   - MaxMessageBytes and MaxMetadataBytes as the largest request and
//     metadata received (gRPC's defaults are 4 MiB, too small for a
//     full-size append batch, and 16 MiB);
//   - the keepalive policy: the server lets clients ping idle
//     connections every 10 s (gRPC's default policy closes the connection
//     of a Client, which pings every 30 s), and pings idle clients so
//     that dead ones' long-polls end.
//
// The limits that the service applies itself (MaxInFlight, MaxLongPolls,
// MaxAppendStreams and their per-connection shares, MaxLongPollBytes,
// tokens) hold on any server, with these options or not.
func (s *Server) GRPCServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.ForceServerCodecV2(wireCodec{}),
		grpc.MaxRecvMsgSize(s.maxMessageBytes),
		grpc.MaxHeaderListSize(s.maxMetadataBytes),
		grpc.MaxConcurrentStreams(s.connStreams()),
		// Clients ping idle connections to find dead brokers; allow it.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 10 * time.Second, PermitWithoutStream: true}),
		// Find dead clients so their long-polls end.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: time.Minute, Timeout: 20 * time.Second}),
	}
}

// Serve accepts connections on lis until Stop or GracefulStop, after which
// it returns nil; called after them, it closes lis and returns nil.
//
// While it serves, its health service follows the engine: once a failed
// fsync stopped the engine's writes (equeue.Engine.StoreFailure), it
// answers NOT_SERVING, so that an orchestrator restarts the process.
func (s *Server) Serve(lis net.Listener) error {
	s.log.Info("equeue server listening", "addr", lis.Addr().String())
	if f, ok := s.e.(storeFailer); ok {
		go s.watchStore(f)
	}
	if err := s.grpc.Serve(lis); !errors.Is(err, grpc.ErrServerStopped) {
		return err
	}
	// Stop or GracefulStop came before Serve (gRPC's Serve closed lis).
	return nil
}

// storeFailer is a backend that reports a store failure that stopped its
// writes (the engine).
type storeFailer interface{ StoreFailure() error }

// storeWatchInterval is how often Serve checks the engine's store.
const storeWatchInterval = 500 * time.Millisecond

// watchStore turns the health service to NOT_SERVING once f reports a store
// failure, until the server stops.
func (s *Server) watchStore(f storeFailer) {
	t := time.NewTicker(storeWatchInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stopping.Done():
			return
		case <-t.C:
			if err := f.StoreFailure(); err != nil {
				s.log.Error("the engine stopped writing after a failed fsync: health is NOT_SERVING; restart the server", "err", err)
				s.health.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
				s.health.SetServingStatus(pb.Broker_ServiceDesc.ServiceName, healthpb.HealthCheckResponse_NOT_SERVING)
				return
			}
		}
	}
}

// Register adds the Broker service, with its authentication and in-flight
// limits, to another gRPC server (for a process that serves more than
// equeue). Make that server with GRPCServerOptions (and the
// application's own options) to serve as s's own gRPC server does. Stop
// and GracefulStop of s still end its long-polls there. A call without a
// known token is refused before its request is decoded, but on a server
// with unary interceptors of the application's, which see every call, it
// is refused after them.
//
// On a server made without GRPCServerOptions the service serves all the
// same, with these differences: a request that does not decode is
// answered Internal, by gRPC, where s's own gRPC server answers
// InvalidArgument; one connection may open any number of streams; a
// request is bounded by gRPC's default (4 MiB) rather than
// MaxMessageBytes; and gRPC's default keepalive policy closes the
// connections of Clients, which ping idle connections more often than it
// allows.
func (s *Server) Register(reg grpc.ServiceRegistrar) {
	registerDecoding(reg, &s.desc, s.svc)
}

// GracefulStop stops accepting connections, ends long-polls at once (their
// clients see ErrUnavailable and retry), and waits for other calls to finish.
// An AppendStream call ends once its appends are answered and its client
// closed its side, or 5 s after they are answered if it does not. Calls
// still running after ServerOptions.GracefulStopTimeout (30 s by default;
// negative waits for ever) are ended as by Stop: a client that stops
// reading its AppendStream answers while its connection stays up would
// otherwise hold GracefulStop until it reads again, as gRPC's own
// GracefulStop is held by any call whose answers are not read.
func (s *Server) GracefulStop() {
	s.health.Shutdown()
	s.stop()
	if s.stopTimeout < 0 {
		s.grpc.GracefulStop()
		return
	}
	done := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(done)
	}()
	t := time.NewTimer(s.stopTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.log.Warn("calls still running after the grace period; closing their connections", "grace", s.stopTimeout)
		s.grpc.Stop()
		<-done
	}
}

// Stop closes every connection and cancels every call at once.
func (s *Server) Stop() {
	s.health.Shutdown()
	s.stop()
	s.grpc.Stop()
}

// serviceDesc wraps every Broker method so that guard runs first, whether
// the service is registered on s's own gRPC server or on another.
// Register adds decodeRequest's decoding to it (registerDecoding).
func (s *Server) serviceDesc() grpc.ServiceDesc {
	d := pb.Broker_ServiceDesc
	d.Methods = make([]grpc.MethodDesc, len(pb.Broker_ServiceDesc.Methods))
	for i, m := range pb.Broker_ServiceDesc.Methods {
		h, direct := m.Handler, m.Handler
		// Without an interceptor of the application's, Append decodes its
		// request and Pull encodes its answer directly (appendin.go,
		// answerwire.go).
		switch m.MethodName {
		case appendMethod:
			h, direct = appendHandler(false), appendHandler(true)
		case pullMethod:
			h, direct = pullHandler(false), pullHandler(true)
		}
		full := "/" + pb.Broker_ServiceDesc.ServiceName + "/" + m.MethodName
		d.Methods[i] = grpc.MethodDesc{
			MethodName: m.MethodName,
			Handler: func(srv any, ctx context.Context, dec func(any) error, next grpc.UnaryServerInterceptor) (any, error) {
				srv = s.serviceFor(ctx, srv)
				if next == nil {
					// A caller without a known token is refused before its
					// request is decoded (guard checks the rights after).
					if _, err := s.tokens.authenticate(ctx); err != nil {
						s.refusals.refused(ctx, full, err)
						return nil, err
					}
					return direct(srv, ctx, dec, s.guard)
				}
				return h(srv, ctx, dec, func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
					return s.guard(ctx, req, info, func(ctx context.Context, req any) (any, error) {
						return next(ctx, req, info, handler)
					})
				})
			},
		}
	}
	d.Streams = make([]grpc.StreamDesc, len(pb.Broker_ServiceDesc.Streams))
	for i, sd := range pb.Broker_ServiceDesc.Streams {
		h := sd.Handler
		sd.Handler = func(srv any, st grpc.ServerStream) error {
			// Authentication and limits are per append (appendstream_server.go).
			return h(s.serviceFor(st.Context(), srv), st)
		}
		d.Streams[i] = sd
	}
	return d
}

// guard authenticates and authorizes a call, bounds the calls in flight,
// turns a panic into an Internal error and engine errors into statuses.
func (s *Server) guard(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
	if err := s.tokens.authorize(ctx, info.FullMethod, req); err != nil {
		s.refusals.refused(ctx, info.FullMethod, err)
		return nil, err
	}
	count, limit, what, share := &s.inFlight, s.maxInFlight, "calls", s.callShare
	longPoll := isLongPoll(req)
	if longPoll {
		count, limit, what, share = &s.longPolls, s.maxLongPolls, "long-polls", s.longPollShare
	}
	if n := count.Add(1); n > limit {
		count.Add(-1)
		s.log.Debug("call refused: busy", "method", info.FullMethod, "limit", limit, "of", what)
		return nil, toStatus(fmt.Errorf("%w: %d %s in flight", ErrBusy, limit, what))
	}
	defer count.Add(-1)
	key, err := share.take(ctx)
	if err != nil {
		s.log.Debug("call refused: busy", "method", info.FullMethod, "peer", peerAddr(ctx), "err", err)
		return nil, toStatus(err)
	}
	defer share.give(key)
	if longPoll {
		// The request is kept for as long as the call waits.
		n := int64(proto.Size(req.(proto.Message)))
		key, err := s.longPollBytes.take(ctx, n)
		if err != nil {
			s.log.Debug("call refused: busy", "method", info.FullMethod, "peer", peerAddr(ctx), "err", err)
			return nil, toStatus(err)
		}
		defer s.longPollBytes.give(key, n)
	}
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("panic in call", "method", info.FullMethod, "panic", p, "stack", string(debug.Stack()))
			resp, err = nil, status.Errorf(codes.Internal, "remote: internal error in %s", info.FullMethod)
		}
	}()
	resp, err = handler(ctx, req)
	if err != nil {
		err = toStatus(err)
		s.failures.failed(info.FullMethod, status.Code(err), err)
	}
	return resp, err
}

// longPoll derives a call context that also ends when the server stops, so
// that a stopping server does not wait out pulls and heartbeats.
func (s *Server) longPoll(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	unhook := context.AfterFunc(s.stopping, func() { cancel(errStopping) })
	return ctx, func() {
		unhook()
		cancel(nil)
	}
}

// stopped reports a long-poll ended by the server stopping as ErrUnavailable.
func (s *Server) stopped(ctx context.Context, err error) error {
	if errors.Is(context.Cause(ctx), errStopping) {
		return errStopping
	}
	return err
}

// isLongPoll reports whether a request may wait for data or a change.
func isLongPoll(req any) bool {
	switch r := req.(type) {
	case *pb.PullRequest:
		return r.GetWait().AsDuration() > 0
	case *pb.HeartbeatRequest:
		return r.GetWait().AsDuration() > 0
	case *pb.PullManyRequest:
		return r.GetWait().AsDuration() > 0
	}
	return false
}

// connStreams is how many HTTP/2 streams one connection holds open at
// once (grpc.MaxConcurrentStreams): its shares of MaxInFlight, MaxLongPolls
// and MaxAppendStreams (their totals where a share bounds nothing), plus
// extraConnStreams. A stream holds the server's goroutine and buffers from
// its headers on, before any of those limits sees its call (one whose
// request never comes waits for it), so without this bound one connection
// could hold any number. A connection within its shares never reaches it,
// so a client's sends do not wait behind its consumers' long-polls; past
// it, a gRPC client waits for a place, and a client that ignores the bound
// has the stream refused (REFUSED_STREAM).
func (s *Server) connStreams() uint32 {
	// Each term is capped first: shares of totals as large as an int64
	// holds would overflow the sum, and wrap the bound around.
	n := int64(extraConnStreams)
	for _, b := range []int64{s.callShare.bound(s.maxInFlight), s.longPollShare.bound(s.maxLongPolls), s.streamShare.bound(s.maxStreams)} {
		n += min(b, math.MaxUint32)
	}
	return uint32(min(n, math.MaxUint32-1))
}

// streamWorkers is how many goroutines the gRPC server keeps to run calls
// on (grpc.NumStreamWorkers). Without them every call runs on a new
// goroutine, whose stack then grows, by copying, as the call goes down
// through gRPC, the engine and Badger: a tenth of the CPU of a pull of one
// message went into those copies. A call that finds every worker busy
// (long-polls hold theirs for their whole wait) runs on a goroutine of its
// own, as without workers; gRPC replaces each worker after 65,536 calls,
// which lets a stack grown by a deep call shrink back.
func streamWorkers() uint32 { return uint32(max(16, 4*runtime.GOMAXPROCS(0))) }
