// Package remote serves an equeue engine over the network and connects to it:
// a Server wraps an *equeue.Engine in a gRPC service, and Dial returns a
// Client that implements equeue.Broker, so equeue.NewProducer and
// equeue.NewConsumer work on a remote broker exactly as on an in-process
// engine, with the same errors and semantics.
//
// # Server
//
//	e, _ := equeue.Open(dir, nil)
//	srv, _ := remote.NewServer(e, &remote.ServerOptions{Tokens: tokens})
//	lis, _ := net.Listen("tcp", ":7070")
//	go srv.Serve(lis)
//	...
//	srv.GracefulStop() // ends long-polls at once, waits for other calls (30 s at most)
//	e.Close()          // the server does not own the engine
//
// The server also registers the standard gRPC health service and server
// reflection, so grpc_health_probe and grpcurl work against it.
//
// # Client
//
//	c, _ := remote.Dial("broker:7070", &remote.ClientOptions{Token: tok})
//	defer c.Close()
//	p, _ := equeue.NewProducer(c, nil)
//	cons, _ := equeue.NewConsumer(c, equeue.ConsumerOptions{...})
//
// Client also has the engine's admin calls with the same signatures (topics,
// groups, offset resets, dead letters); the Admin interface covers both, so
// tools can run in-process or remotely. A Client is safe for concurrent use
// and must be closed. Messages are batched on the wire (an Append carries
// many messages, a Pull returns many); Pull and Heartbeat are long-polls
// bounded by the request's wait and the call's deadline. The group
// long-polls of all consumers on one Client travel in one PullMany call (up
// to 4,096 of them; any more wait in Pull calls of their own), so a
// consumer costs the server the same whatever its number of queues, and
// every pull answer stays within the client's MaxMessageBytes. A message
// answers only the pull of its queue: the others stay in the next call
// until their own wait ends, so they do not come back empty and re-ask.
// The asynchronous appends of a Client (equeue.Producer.SendAsync, through
// Client.AppendAsync) are pipelined on one AppendStream call: numbered,
// several per request, answered in any order, within a window. An append
// whose context carries outgoing metadata of the caller's goes as a unary
// call, which carries that metadata (the stream carries only its own), on
// a goroutine of its own and in no order with other appends. The window
// (4,096 appends not yet answered, on the stream or as unary calls;
// a ClusterClient's likewise, while it looks for the leader too) is the
// client's backpressure: AppendAsync, and so SendAsync, waits for a slot
// while it is full, until one frees, its context ends or Close begins.
//
// # Errors
//
// Engine errors keep their sentinel across the wire: errors.Is(err,
// equeue.ErrTopicNotFound) holds on the client as in-process. The status
// carries a google.rpc.ErrorInfo detail (domain "equeue") naming the
// sentinel, so other gRPC clients can read it too. A refused join's mark
// (equeue.ErrJoinRefused, reason JOIN_REFUSED) rides beside the error that
// says why, whose code the status takes; alone, it takes the code of the
// failure no sentinel names (Internal, or the context's). The exception is
// equeue.ErrClosed: a broker that is unreachable, stopping or whose engine is
// closed gives ErrUnavailable, which is retryable, because a Consumer stops
// for good on equeue.ErrClosed. The client returns equeue.ErrClosed only after
// its own Close. Authentication failures give ErrUnauthenticated and
// ErrPermissionDenied; a server over its MaxInFlight (or, for long-polls,
// MaxLongPolls, or a connection's share of it, MaxLongPollsPerConn) gives
// ErrBusy before running the call, which the Client retries with backoff
// until the call's context ends; over its MaxAppendStreams (or a
// connection's share, MaxAppendStreamsPerConn) it refuses an AppendStream
// call as busy, and the Client appends with unary calls meanwhile. The
// appends of one connection's AppendStream calls hold at most
// MaxStreamAppendsPerConn of MaxInFlight; those past it wait in their
// stream instead of being refused. A call whose metadata is over the
// broker's MaxMetadataBytes is refused by the client's own transport
// before it leaves: ErrMetadataTooLarge, which matches
// equeue.ErrInvalidArgument.
//
// # Security
//
// ServerOptions.TLS enables TLS (and mutual TLS through ClientAuth);
// ServerOptions.Tokens enables bearer-token authentication with per-token
// Rights. A refused call changes nothing. Consume rights do not include
// produce rights, and no token may append to the engine's %RETRY% and %DLQ%
// topics: a consumer hands failures back with SendBack, which the engine
// checks against what the member owns and pulled. Server.HTTPBearer
// matches an HTTP request's bearer token against the same tokens, for HTTP
// endpoints served beside the server.
//
// # Protocol
//
// The protocol is proto/equeue/v1/equeue.proto; the generated Go code is in
// package equeuepb. Regenerate it with `go generate ./remote` (see
// proto/README.md for the tools it needs).
package remote

//go:generate protoc -I proto --go_out=. --go_opt=module=github.com/equeue-go/equeue/remote --go-grpc_out=. --go-grpc_opt=module=github.com/equeue-go/equeue/remote equeue/v1/equeue.proto
