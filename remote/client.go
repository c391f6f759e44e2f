package remote

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/equeue-go/equeue"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// ClientOptions configure a Client. A nil *ClientOptions, and every zero
// field, means the documented default.
type ClientOptions struct {
	// TLS, when set, connects with TLS (add Certificates for mutual TLS).
	// Nil means plaintext.
	TLS *tls.Config
	// Token is sent as "authorization: Bearer <token>" with every call.
	// Empty sends none. Without TLS the token crosses the network in clear.
	Token string
	// DialTimeout, when positive, makes Dial wait up to this long for the
	// connection to be ready and fail with ErrUnavailable otherwise. Zero
	// means Dial returns at once and connects on the first call.
	DialTimeout time.Duration
	// MaxMessageBytes is the largest message the client sends or accepts.
	// An append whose answer (an ID per message) could be larger is
	// refused before it is sent, with equeue.ErrMessageTooLarge.
	// Zero means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxReconnectDelay caps the wait between reconnection attempts while
	// the broker is down, and between opening append streams again while
	// each breaks before answering. Zero means 5 s.
	MaxReconnectDelay time.Duration
	// Logger receives the client's logs. Nil means silent.
	Logger *slog.Logger
	// PullAhead is how many messages a consumer's pull of one queue asks
	// the broker for: the consumer gets the batch it asked for, and the
	// rest is kept for its next pulls of the queue, which then need no
	// round trip, while the next answer is fetched before they run out.
	// So up to about 1.5 x PullAhead messages per queue (and at most
	// MaxMessageBytes per answer) are held beyond the consumer's own
	// flow-control limits. Zero means DefaultPullAhead; a negative value
	// turns reading ahead off (every pull is a call). It applies to the
	// long-poll pulls of group members (equeue.Consumer, and PullConsumer
	// with a wait); values above equeue.MaxPullBatch mean MaxPullBatch.
	PullAhead int
}

// DefaultPullAhead is the default ClientOptions.PullAhead.
const DefaultPullAhead = equeue.MaxPullBatch

// longPollSlack is how long past its wait a long-poll may take before the
// client gives up on a call that has no deadline of its own.
const longPollSlack = 30 * time.Second

// Client is a broker over the network: it implements equeue.Broker, so
// equeue.NewProducer and equeue.NewConsumer work on it as on an *Engine,
// and the engine's admin calls (see Admin). It is safe for concurrent use;
// Close it when done.
//
// Errors keep their engine sentinel (errors.Is(err, equeue.ErrFenced) and so
// on). A broker that cannot be reached, is stopping, or whose engine is
// closed gives ErrUnavailable, which is retryable: gRPC reconnects by
// itself, and a Consumer on the client carries on once the broker is back.
// equeue.ErrClosed is returned only after Close.
type Client struct {
	conn   *grpc.ClientConn
	api    pb.BrokerClient
	log    *slog.Logger
	closed atomic.Bool
	// closeDone is closed once the first Close is done: a later or
	// concurrent Close waits for it.
	closeDone chan struct{}
	// maxAnswer is the client's receive limit, sent with every pull so the
	// broker never answers more than the client can take.
	maxAnswer int
	// mux carries the consumers' long-polls, all in one call.
	mux *pullMux
	// pipe carries AppendAsync calls, pipelined on one stream.
	pipe *appendPipe
	// wires holds the encoded appends of AppendAsync calls (wireslab.go).
	wires wireSlab
	// calls counts the AppendAsync calls in progress, for Close to wait
	// for (one may wait for a window slot).
	calls *callGate
	// runners records the goroutines running its callbacks, or its close.
	runners *callbackRunners
	// owed keeps the error of a close begun from a callback.
	owed owedErr
	// ahead serves consumers' pulls from answers fetched ahead.
	ahead *readAhead
	// replyKey tags the names of its producers' reply topics, for its
	// token (replyowner.go).
	replyKey [sha256.Size]byte
	// told holds the session timeout and the MaxPullWait of the engine
	// the latest join or heartbeat answer told. See heartbeatSlack and
	// callBound.
	told *toldLimits
	// slack is longPollSlack, in nanoseconds; tests shorten it.
	slack atomic.Int64
	// watch counts conn's departures, for the append stream (connLeft).
	watch *connWatch
}

var _ equeue.Broker = (*Client)(nil)

// Dial returns a client of the broker at addr ("host:port").
func Dial(addr string, opts *ClientOptions) (*Client, error) {
	return dial(addr, opts, nil)
}

// dial is Dial; the client's callback runners have parent (those of the
// ClusterClient whose node it is), or none.
func dial(addr string, opts *ClientOptions, parent *callbackRunners) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	if o.DialTimeout < 0 || o.MaxMessageBytes < 0 || o.MaxReconnectDelay < 0 {
		return nil, fmt.Errorf("%w: negative ClientOptions field", equeue.ErrInvalidOptions)
	}
	if o.MaxMessageBytes == 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.MaxReconnectDelay == 0 {
		o.MaxReconnectDelay = 5 * time.Second
	}
	if o.PullAhead == 0 {
		o.PullAhead = DefaultPullAhead
	}
	o.PullAhead = min(o.PullAhead, equeue.MaxPullBatch)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	told := new(toldLimits)
	watch := newConnWatch()
	creds := insecure.NewCredentials()
	if o.TLS != nil {
		creds = credentials.NewTLS(o.TLS)
	}
	bo := backoff.DefaultConfig
	bo.BaseDelay = min(100*time.Millisecond, o.MaxReconnectDelay)
	bo.MaxDelay = o.MaxReconnectDelay
	dopts := []grpc.DialOption{
		grpc.WithTransportCredentials(newNamingCreds(creds)),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(o.MaxMessageBytes), grpc.MaxCallSendMsgSize(o.MaxMessageBytes),
			grpc.ForceCodecV2(wireCodec{})),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: 5 * time.Second}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{Time: 30 * time.Second, Timeout: 10 * time.Second, PermitWithoutStream: true}),
		grpc.WithChainUnaryInterceptor(retryBusy, markHeadersRefused),
		grpc.WithChainStreamInterceptor(markStreamHeadersRefused),
		// gRPC's own retries and hedging, which a service config from the
		// resolver (a DNS TXT record, read by default) may turn on, would
		// send again a call that may have run: the client alone decides
		// what is sent again (retryBusy). gRPC still retries by itself a
		// call whose attempt the broker did not process (GOAWAY, a
		// REFUSED_STREAM reset): a refusal of its metadata by the
		// transport (headersRefused) is of the call's latest attempt.
		grpc.WithDisableRetry(),
		experimental.WithBufferPool(bufferPool),
		grpc.WithStatsHandler(sentStats{told: told, watch: watch}),
	}
	if o.Token != "" {
		dopts = append(dopts, grpc.WithPerRPCCredentials(newTokenCreds(o.Token)))
	}
	conn, err := grpc.NewClient(addr, dopts...)
	if err != nil {
		return nil, fmt.Errorf("remote: dial %s: %w", addr, err)
	}
	c := &Client{conn: conn, api: pb.NewBrokerClient(conn), watch: watch, log: o.Logger, maxAnswer: o.MaxMessageBytes, replyKey: replyKey(o.Token),
		closeDone: make(chan struct{}), told: told, calls: newCallGate(), runners: newCallbackRunners(parent)}
	watch.start(conn)
	c.slack.Store(int64(longPollSlack))
	c.mux = newPullMux(c)
	c.pipe = newAppendPipe(c, o.MaxReconnectDelay)
	c.ahead = newReadAhead(c, o.PullAhead)
	if o.DialTimeout > 0 {
		if err := c.waitReady(o.DialTimeout); err != nil {
			_ = conn.Close()
			c.watch.close()
			return nil, fmt.Errorf("%w: dial %s: %v", ErrUnavailable, addr, err)
		}
	}
	return c, nil
}

// waitReady connects and waits until the connection is ready.
func (c *Client) waitReady(timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	c.conn.Connect()
	for {
		s := c.conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !c.conn.WaitForStateChange(ctx, s) {
			return fmt.Errorf("not ready after %v (state %s)", timeout, s)
		}
	}
}

// Close closes the connection; calls in progress and later calls return
// equeue.ErrClosed. It completes every AppendAsync not answered yet before
// it returns (an append waiting for a window slot, or to retry after
// ErrBusy, with equeue.ErrClosed: not sent; one in flight as
// equeue.ErrIndeterminate): once Close has returned, no callback of the
// client runs any more. Idempotent: a
// later or concurrent Close returns nil once the first is done
// (but see a Close from a callback, below).
//
// Close called from an AppendAsync callback of the client (or from one
// that Close itself runs, reporting an append) cannot wait for the
// callbacks in progress, its own among them: it refuses later calls,
// begins the close, which a goroutine of the client completes once those
// callbacks have returned, and returns nil at once. Callbacks of other
// appends may then still run after it returned; a Close called from
// elsewhere waits for the close to be done, after which none runs. As
// the close's error (the connection's) comes after that Close returned,
// the first Close called from elsewhere afterwards returns it.
func (c *Client) Close() error {
	if c.runners.current() {
		if c.closed.CompareAndSwap(false, true) {
			go func() { _ = c.shutdown(true) }()
		}
		return nil
	}
	if !c.closed.CompareAndSwap(false, true) {
		<-c.closeDone
		return c.owed.take()
	}
	return c.shutdown(false)
}

// shutdown is the work of the first Close: it reports what is pending,
// on the current goroutine (recorded as running callbacks meanwhile).
// owe says that the Close that began it has returned: its error is kept
// for the next Close. A callback it runs that panics does not stop it:
// it closes the connection and waits for the client's goroutines all the
// same, marks the close done, and then lets the panic go on (the first
// one; later ones are logged, closePanics).
func (c *Client) shutdown(owe bool) (err error) {
	id := c.runners.enter()
	defer c.runners.exit(id)
	defer func() {
		if owe {
			c.owed.owe(err)
		}
		close(c.closeDone)
	}()
	c.calls.close()
	c.ahead.close()
	c.mux.close()
	defer func() {
		// The calls waiting for a window slot woke when the pipe closed:
		// they report equeue.ErrClosed now, before Close returns.
		c.calls.wait()
		err = c.conn.Close()
		c.watch.close()
		c.pipe.waitUnary() // the closed connection ends their calls
	}()
	c.pipe.close(newClosePanics(c.log))
	return nil // the connection's error, set above
}

// enter refuses calls on a closed client or with a nil context.
func (c *Client) enter(ctx context.Context) error {
	if c.closed.Load() {
		return equeue.ErrClosed
	}
	if ctx == nil {
		return fmt.Errorf("%w: nil context", equeue.ErrInvalidArgument)
	}
	return nil
}

// fail maps a call's error to the engine's (or this package's) errors.
func (c *Client) fail(err error) error {
	if c.closed.Load() {
		return fmt.Errorf("%w: remote client closed", equeue.ErrClosed)
	}
	return fromStatus(err)
}

// longPoll bounds a long-poll call that has no deadline, so a broker that
// vanished without closing the connection cannot hold it forever: it may
// take callBound(wait) from now. Call it when the call starts.
func (c *Client) longPoll(ctx context.Context, wait time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.callBound(wait))
}

// callBound is how long a call that asks the broker to wait up to wait
// may take: the wait, within the engine's MaxPullWait when an answer told
// it (the broker answers by then whatever the call asked), plus the
// slack. While the cap is unknown (before an answer told it, after a
// reconnection, or when the latest answer told none: a server of an older
// version) it is the wait plus the slack.
func (c *Client) callBound(wait time.Duration) time.Duration {
	return addCapped(c.withinCap(max(wait, 0)), c.pollSlack())
}

// withinCap is wait within the engine's MaxPullWait when an answer told
// it (see callBound), else wait.
func (c *Client) withinCap(wait time.Duration) time.Duration {
	if limit := c.told.maxPullWait(); limit > 0 {
		return min(wait, limit)
	}
	return wait
}

// addCapped is wait + slack (both not negative), or the longest duration
// when the sum passes it: a wait as long as a time.Duration holds ("as
// long as the broker lets me") would otherwise overflow to a negative
// bound, and its call would end before it started.
func addCapped(wait, slack time.Duration) time.Duration {
	if wait > math.MaxInt64-slack {
		return math.MaxInt64
	}
	return wait + slack
}

// pollSlack is how long past its wait a long-poll may take: longPollSlack
// (shorter in tests).
func (c *Client) pollSlack() time.Duration { return time.Duration(c.slack.Load()) }

// longPollWithin bounds a call without a deadline by its whole wait (not
// within the engine's cap) plus slack, from now.
func longPollWithin(ctx context.Context, wait, slack time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, addCapped(max(wait, 0), slack))
}

// heartbeatSlack is how long past its wait a heartbeat without a deadline
// of its own may take: longPollSlack, or the engine's session timeout
// when an answer told a shorter one. The engine answers a heartbeat
// within its wait, capped at half the session; one not answered a whole
// session past its wait has been held up on the way, the member's own
// lease has ended, and the engine has likely expired it: waiting longer
// only delays its retrying, hearing so, and rejoining.
func (c *Client) heartbeatSlack() time.Duration {
	if s := c.told.sessionTimeout(); s > 0 {
		return min(s, c.pollSlack())
	}
	return c.pollSlack()
}

// learnLimits records the session timeout and the pull wait cap a join
// or heartbeat answer told, in place of those an earlier answer told: a
// limit it does not tell (a server of an older version tells no cap) is
// unknown from now on. over is the local address of the connection the
// answer came over: an answer of a connection before the latest changes
// nothing (toldLimits). It returns a.
func (c *Client) learnLimits(over net.Addr, a equeue.Assignment) equeue.Assignment {
	c.told.learn(over, a)
	return a
}

// Route returns a topic's queues.
func (c *Client) Route(ctx context.Context, topic string) (equeue.Route, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.Route{}, err
	}
	resp, err := c.api.Route(ctx, &pb.RouteRequest{Topic: topic})
	if err != nil {
		return equeue.Route{}, c.fail(err)
	}
	r := equeue.Route{Topic: resp.GetTopic(), Queues: int(resp.GetQueues()), Writable: make([]int, len(resp.GetWritable())),
		Priorities: int(resp.GetPriorities())}
	for i, q := range resp.GetWritable() {
		r.Writable[i] = int(q)
	}
	return r, nil
}

// Append stores messages in one queue, in order. If ctx ends or the
// connection fails before the answer, the outcome is unknown.
//
// It travels on the client's AppendStream call, as AppendAsync's appends
// do, and waits for its answer: an append on a call already open costs the
// client and the broker less than a unary call of its own. Its outcomes
// are AppendAsync's; the broker counts it against MaxInFlight and refuses
// it as busy alike, and the client retries that. A broker without
// AppendStream gets a unary Append call, and so does an append whose ctx
// carries outgoing metadata of the caller's (see AppendAsync), and one
// called from an AppendAsync callback of the client: that callback may run
// on the goroutine that reads the stream's answers, its own among them.
func (c *Client) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.AppendResult{}, err
	}
	if err := checkAppend(req); err != nil {
		return equeue.AppendResult{}, err
	}
	if err := ctx.Err(); err != nil {
		return equeue.AppendResult{}, err // never sent, as the engine takes none
	}
	if !c.pipe.unary.Load() && !callerMetadata(ctx) && !c.runners.current() {
		// AppendAsync checks that the answer fits.
		done := make(chan struct{})
		var (
			res equeue.AppendResult
			err error
		)
		c.AppendAsync(ctx, req, func(r equeue.AppendResult, e error) {
			res, err = r, e
			close(done)
		})
		<-done
		return res, err
	}
	if err := c.answerFits(req); err != nil {
		return equeue.AppendResult{}, err
	}
	return c.appendUnary(ctx, req)
}

// appendUnary is Append as a unary call.
func (c *Client) appendUnary(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	in, err := appendRequest(req)
	if err != nil {
		return equeue.AppendResult{}, err
	}
	// As c.api.Append, with the request encoded by appendRequest and the
	// answer decoded by appendReply.
	var resp appendReply
	m := new(sentMarker)
	if err := c.conn.Invoke(context.WithValue(ctx, sentKey{}, m), pb.Broker_Append_FullMethodName, in, &resp, grpc.StaticMethod()); err != nil {
		ferr := c.fail(err)
		if m.sent.Load() && !brokerAnswer(err) {
			// The request left the client: the broker may have stored it.
			return equeue.AppendResult{}, fmt.Errorf("%w: remote: append sent and not answered: %w", equeue.ErrIndeterminate, ferr)
		}
		if !m.sent.Load() {
			return equeue.AppendResult{}, unsentUnavailable(ferr)
		}
		return equeue.AppendResult{}, ferr
	}
	return resp.a.result(len(req.Messages))
}

// sentKey is the context key of a call's sentMarker.
type sentKey struct{}

// sentMarker records that a call's request was written to the connection
// (sentStats), so the broker may have run it.
type sentMarker struct{ sent atomic.Bool }

// sentStats marks the calls that carry a sentMarker once their request is
// written, and those that carry an openedMarker once the stream of their
// current attempt opened (gRPC reports its headers sent), and forgets the
// limits told (told) when a new connection begins: they were told by the
// broker of the connection before. It counts the connections begun in
// watch.
type sentStats struct {
	told  *toldLimits
	watch *connWatch
}

// connLocalKey is the context key of a connection's local address, which
// sentStats.TagConn puts in the connection's context.
type connLocalKey struct{}

func (sentStats) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

func (sentStats) HandleRPC(ctx context.Context, s stats.RPCStats) {
	switch s.(type) {
	case *stats.OutPayload:
		if m, ok := ctx.Value(sentKey{}).(*sentMarker); ok {
			m.sent.Store(true)
		}
	case *stats.Begin:
		// A new attempt of the call: gRPC retries one by itself only when
		// the broker did not process the attempts before (a transparent
		// retry), so whether this one's stream opened is all that counts.
		if m, ok := ctx.Value(openedKey{}).(*openedMarker); ok {
			m.opened.Store(false)
		}
	case *stats.OutHeader:
		if m, ok := ctx.Value(openedKey{}).(*openedMarker); ok {
			m.opened.Store(true)
		}
	}
}

func (sentStats) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return context.WithValue(ctx, connLocalKey{}, info.LocalAddr)
}

func (h sentStats) HandleConn(ctx context.Context, s stats.ConnStats) {
	if _, ok := s.(*stats.ConnBegin); ok {
		local, _ := ctx.Value(connLocalKey{}).(net.Addr)
		h.told.forget(local)
		h.watch.connBegan()
	}
}

// brokerAnswer reports whether err is the broker's answer to a call (its
// outcome is known), not the call breaking or its context ending on the
// way: those carry no engine error and are Canceled, DeadlineExceeded or
// Unavailable, Internal or Unknown, as gRPC reports an answer it could not
// read, or a stream reset (RST_STREAM, by a proxy, say) of any code
// (streamReset). A broker
// answers Internal without an engine error only for a failure it could
// not classify (a panic among them), whose outcome it does not know either.
func brokerAnswer(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok && info.GetDomain() == errorDomain {
			return true
		}
	}
	if streamReset(st) {
		return false
	}
	if headersRefused(err) {
		return true // refused before it left the client: nothing was done
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.Internal, codes.Unknown:
		return false
	case codes.ResourceExhausted:
		// Without the server's details, only gRPC's own size limit is
		// known to refuse a call before it runs; another (a proxy's rate
		// limit, which may answer so after forwarding the call) is no
		// answer of the broker's.
		return sizeLimit(st)
	}
	return true
}

// Pull reads messages from one queue; at its end it waits up to req.Wait
// (bounded by the broker's MaxPullWait and ctx) for new ones. Max and
// MaxBytes travel as int32: a value beyond that range is clamped to its
// bound, which is harmless (a Max that large is refused as the caller's
// would be, naming the bound; a MaxBytes that large bounds nothing).
func (c *Client) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.PullResult{}, err
	}
	if req == nil {
		return equeue.PullResult{}, fmt.Errorf("%w: nil pull request", equeue.ErrInvalidArgument)
	}
	if err := checkQueue(req.Topic, req.Queue); err != nil {
		return equeue.PullResult{}, err
	}
	// Each call bounds itself when it starts (longPoll): a call before
	// the long-poll (reading ahead) takes nothing off the long-poll's time.
	var res equeue.PullResult
	var err error
	if c.ahead.enabled(req) {
		res, err = c.ahead.pull(ctx, req)
	} else {
		in := c.pullPB(req, req.Max, req.Wait)
		if req.Wait > 0 && req.Group != "" {
			// A group member's long-poll: one call carries all of them.
			res, err = c.waitPull(ctx, in)
		} else {
			res, err = c.pullCall(ctx, in)
		}
	}
	if err != nil {
		if c.closed.Load() {
			return equeue.PullResult{}, fmt.Errorf("%w: remote client closed", equeue.ErrClosed)
		}
		return equeue.PullResult{}, err
	}
	return res, nil
}

// pullCall is one Pull call of in, bounded from now (longPoll) when ctx
// has no deadline.
func (c *Client) pullCall(ctx context.Context, in *pb.PullRequest) (equeue.PullResult, error) {
	ctx, cancel := c.longPoll(ctx, in.GetWait().AsDuration())
	defer cancel()
	return c.pullDirect(ctx, in)
}

// pullPB is the wire form of req, asking for max messages and waiting up
// to wait.
func (c *Client) pullPB(req *equeue.PullRequest, max int, wait time.Duration) *pb.PullRequest {
	return &pb.PullRequest{
		Topic: req.Topic, Queue: toInt32(req.Queue), Offset: req.Offset, Max: toInt32(max), Filter: req.Filter,
		Wait: durationPB(wait), Group: req.Group, Member: req.Member, Epoch: req.Epoch,
		MaxAnswerBytes: int32(min(c.maxAnswer, math.MaxInt32)), StoredBatchVersion: equeue.StoredBatchVersion,
		MaxBytes: toInt32(req.MaxBytes),
	}
}

// pullResultFromPB decodes a pull answer.
func pullResultFromPB(resp *pb.PullResponse) (equeue.PullResult, error) {
	var msgs []*equeue.Message
	var err error
	if stored := resp.GetStored(); len(stored) > 0 {
		msgs, err = storedMessages(stored, len(resp.GetMessages()))
	} else {
		msgs, err = messagesFromPB(resp.GetMessages())
	}
	if err != nil {
		return equeue.PullResult{}, fmt.Errorf("remote: bad pull answer: %w", err)
	}
	res := equeue.PullResult{
		Status: equeue.PullStatus(resp.GetStatus()), Messages: msgs,
		NextOffset: resp.GetNextOffset(), MinOffset: resp.GetMinOffset(), MaxOffset: resp.GetMaxOffset(),
		Corrupt: resp.GetCorrupt(), Expired: int(resp.GetExpired()), Priority: int(resp.GetPriority()),
		DeletedTopicRetries: int(resp.GetDeletedTopicRetries()),
	}
	markLane(res)
	return res, nil
}

// JoinGroup adds a member to a consumer group and returns its assignment.
// A join that provably added no member (refused by the broker, or before
// its request left the client: ErrUnauthenticated, ErrPermissionDenied,
// ErrBusy, ErrMetadataTooLarge) matches equeue.ErrJoinRefused beside the
// error that says why; one sent and not answered does not.
func (c *Client) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.Assignment{}, err
	}
	if req == nil {
		return equeue.Assignment{}, fmt.Errorf("%w: nil join request", equeue.ErrInvalidArgument)
	}
	var over peer.Peer
	m := new(sentMarker)
	resp, err := c.api.JoinGroup(context.WithValue(ctx, sentKey{}, m), &pb.JoinGroupRequest{
		Group: req.Group, Member: req.Member, Model: pb.MessageModel(req.Model), Subscriptions: subsToPB(req.Subscriptions),
		From: consumeFromToPB(req.From), FromTimeUnixNano: startNanos(req.FromTime), Strategy: req.Strategy,
		Incarnation: req.Incarnation,
	}, grpc.Peer(&over))
	if err != nil {
		return equeue.Assignment{}, joinFailure(c.fail(err), m.sent.Load())
	}
	return c.learnLimits(over.LocalAddr, assignmentFromPB(resp.GetAssignment())), nil
}

// Heartbeat keeps a member alive; it returns at once when the assignment
// version differs from req.KnownVersion, else waits up to req.Wait.
func (c *Client) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.Assignment{}, err
	}
	if req == nil {
		return equeue.Assignment{}, fmt.Errorf("%w: nil heartbeat request", equeue.ErrInvalidArgument)
	}
	ctx, cancel := longPollWithin(ctx, req.Wait, c.heartbeatSlack())
	defer cancel()
	var over peer.Peer
	resp, err := c.api.Heartbeat(ctx, &pb.HeartbeatRequest{Group: req.Group, Member: req.Member,
		KnownVersion: req.KnownVersion, Wait: durationPB(req.Wait), Incarnation: req.Incarnation}, grpc.Peer(&over))
	if err != nil {
		return equeue.Assignment{}, c.fail(err)
	}
	return c.learnLimits(over.LocalAddr, assignmentFromPB(resp.GetAssignment())), nil
}

// LeaveGroup removes a member; its queues are handed to the others. A
// leave of a replaced incarnation gets equeue.ErrNotMember.
func (c *Client) LeaveGroup(ctx context.Context, req *equeue.LeaveRequest) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	if req == nil {
		return fmt.Errorf("%w: nil leave request", equeue.ErrInvalidArgument)
	}
	_, err := c.api.LeaveGroup(ctx, &pb.LeaveGroupRequest{Group: req.Group, Member: req.Member, Incarnation: req.Incarnation})
	if err != nil {
		return c.fail(err)
	}
	return nil
}

// ReleaseQueues gives up queues a member was asked to hand over.
func (c *Client) ReleaseQueues(ctx context.Context, group, member string, queues []equeue.Grant) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	if err := checkGrants(queues); err != nil {
		return err
	}
	_, err := c.api.ReleaseQueues(ctx, &pb.ReleaseQueuesRequest{Group: group, Member: member, Queues: grantsToPB(queues)})
	if err != nil {
		return c.fail(err)
	}
	return nil
}

// CommitOffsets stores the next offset to consume of owned queues. An
// attempt count beyond int32, which the wire carries, is refused with
// equeue.ErrInvalidArgument before anything is sent.
func (c *Client) CommitOffsets(ctx context.Context, req *equeue.CommitRequest) error {
	if err := c.enter(ctx); err != nil {
		return err
	}
	if req == nil {
		return fmt.Errorf("%w: nil commit request", equeue.ErrInvalidArgument)
	}
	for _, o := range req.Offsets {
		if err := checkQueue(o.Topic, o.Queue); err != nil {
			return err
		}
		for _, a := range o.Attempts {
			if _, err := countInt32("commit attempts", a.Attempts); err != nil {
				return fmt.Errorf("%w (offset %d of %s/%d)", err, a.Offset, o.Topic, o.Queue)
			}
		}
	}
	in := &pb.CommitOffsetsRequest{Group: req.Group, Member: req.Member, Incarnation: req.Incarnation, Offsets: make([]*pb.OffsetCommit, len(req.Offsets))}
	for i, o := range req.Offsets {
		in.Offsets[i] = &pb.OffsetCommit{Grant: &pb.Grant{Topic: o.Topic, Queue: toInt32(o.Queue), Epoch: o.Epoch}, Offset: o.Offset, Attempts: attemptsToPB(o.Attempts)}
	}
	_, err := c.api.CommitOffsets(ctx, in)
	if err != nil && errors.Is(fromStatus(err), equeue.ErrInvalidArgument) && dropDoneMarks(in) {
		// A broker from before done marks drops the field and refuses
		// them as entries of no attempts: commit without them (a restart
		// may then handle those messages again, as it did then).
		_, err = c.api.CommitOffsets(ctx, in)
	}
	if err != nil {
		return c.fail(err)
	}
	return nil
}

// dropDoneMarks removes the done marks (MessageAttempts.Done) from in's
// attempts and reports whether it found any.
func dropDoneMarks(in *pb.CommitOffsetsRequest) bool {
	found := false
	for _, o := range in.Offsets {
		n := len(o.Attempts)
		o.Attempts = slices.DeleteFunc(o.Attempts, (*pb.MessageAttempts).GetDone)
		found = found || len(o.Attempts) < n
	}
	return found
}

// FetchOffsets returns the committed state of each granted queue.
func (c *Client) FetchOffsets(ctx context.Context, group, member string, queues []equeue.Grant) ([]equeue.OffsetCommit, error) {
	if err := c.enter(ctx); err != nil {
		return nil, err
	}
	if err := checkGrants(queues); err != nil {
		return nil, err
	}
	resp, err := c.api.FetchOffsets(ctx, &pb.FetchOffsetsRequest{Group: group, Member: member, Queues: grantsToPB(queues)})
	if err != nil {
		return nil, c.fail(err)
	}
	offs := resp.GetOffsets()
	if len(offs) != len(queues) {
		return nil, fmt.Errorf("remote: broker returned %d offsets for %d queues", len(offs), len(queues))
	}
	out := make([]equeue.OffsetCommit, len(queues))
	for i, q := range queues {
		out[i] = equeue.OffsetCommit{Grant: q, Offset: offs[i]}
	}
	for _, fa := range resp.GetAttempts() {
		i := int(fa.GetQueueIndex())
		if i < 0 || i >= len(out) || fa.GetAttempts() == nil {
			return nil, fmt.Errorf("remote: broker returned attempts for queue index %d of %d", i, len(out))
		}
		out[i].Attempts = append(out[i].Attempts, attemptsFromPB([]*pb.MessageAttempts{fa.GetAttempts()})...)
	}
	return out, nil
}

// SendBack stores a message the member pulled and failed to handle in its
// group's retry or dead-letter topic. If ctx ends or the connection fails
// before the answer, the outcome is unknown. Attempts beyond int32, which
// the wire carries, is refused with equeue.ErrInvalidArgument before it
// is sent.
func (c *Client) SendBack(ctx context.Context, req *equeue.SendBackRequest) (equeue.SendBackResult, error) {
	if err := c.enter(ctx); err != nil {
		return equeue.SendBackResult{}, err
	}
	if req == nil {
		return equeue.SendBackResult{}, fmt.Errorf("%w: nil send-back request", equeue.ErrInvalidArgument)
	}
	if err := checkQueue(req.Grant.Topic, req.Grant.Queue); err != nil {
		return equeue.SendBackResult{}, err
	}
	attempts, err := countInt32("send-back attempts", req.Attempts)
	if err != nil {
		return equeue.SendBackResult{}, err
	}
	var resp *pb.SendBackResponse
	if err := c.change(ctx, func(ctx context.Context) error {
		var err error
		resp, err = c.api.SendBack(ctx, &pb.SendBackRequest{
			Group: req.Group, Member: req.Member, Grant: &pb.Grant{Topic: req.Grant.Topic, Queue: toInt32(req.Grant.Queue), Epoch: req.Grant.Epoch},
			Offset: req.Offset, Attempts: attempts, Delay: durationPB(req.Delay), Cause: req.Cause, DeadLetter: req.DeadLetter,
		})
		return err
	}); err != nil {
		return equeue.SendBackResult{}, err
	}
	return equeue.SendBackResult{Topic: resp.GetTopic(), Attempts: int(resp.GetAttempts()), Duplicate: resp.GetDuplicate()}, nil
}
