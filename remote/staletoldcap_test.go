package remote_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// toldCap serves an engine whose join and heartbeat answers tell the
// MaxPullWait in tell, not the engine's: a negative one tells none, as a
// server of a version before Assignment.MaxPullWait.
type toldCap struct {
	*equeue.Engine
	tell atomic.Int64
}

func (b *toldCap) told(a equeue.Assignment, err error) (equeue.Assignment, error) {
	a.MaxPullWait = max(time.Duration(b.tell.Load()), 0)
	return a, err
}

func (b *toldCap) JoinGroup(ctx context.Context, req *equeue.JoinRequest) (equeue.Assignment, error) {
	return b.told(b.Engine.JoinGroup(ctx, req))
}

func (b *toldCap) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	return b.told(b.Engine.Heartbeat(ctx, req))
}

// A long-poll's wait, the engine's cap on it, the cap an earlier answer
// told and the client's slack: a call bounded by the told cap gives up
// (toldCap + slack) well before the engine answers (wait), one bounded
// by its wait does not (wait + slack).
const (
	staleWait  = 3 * time.Second
	staleSlack = time.Second
	staleCap   = 100 * time.Millisecond
)

// TestClient_AnswerWithoutACapForgetsTheToldOne: a join answer told a cap
// of 100 ms; a heartbeat answer that tells none (a server of an older
// version behind the same address, one capping waits at 3 s) leaves the
// client with no known cap, so a long-poll asking 3 s may take its whole
// wait plus the slack and gets the broker's "no new message", not a
// deadline error at the stale cap plus the slack. So for a group member's
// long-poll (with and without reading ahead) and a pull outside a group.
func TestClient_AnswerWithoutACapForgetsTheToldOne(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group bool
		ahead int
	}{
		{"member reading ahead", true, 0},
		{"member", true, -1},
		{"outside a group", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out a long-poll of its own server
			ctx := ctxT(t)
			b := &toldCap{Engine: openEngine(t, &equeue.Options{MaxPullWait: staleWait})}
			require.NoError(t, b.CreateTopic(ctx, "t", 1))
			srv, err := remote.NewBackendServer(b, nil)
			require.NoError(t, err)
			c := dial(t, serve(t, srv, "").addr, &remote.ClientOptions{PullAhead: tc.ahead})
			remote.SetLongPollSlack(c, staleSlack)
			b.tell.Store(int64(staleCap))
			a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.Equal(t, staleCap, a.MaxPullWait)
			require.Len(t, a.Queues, 1)
			b.tell.Store(-1)
			a, err = c.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: a.Version})
			require.NoError(t, err)
			require.Zero(t, a.MaxPullWait, "the answer tells no cap")
			req := &equeue.PullRequest{Topic: "t", Queue: 0, Wait: staleWait}
			if tc.group {
				req.Group, req.Member, req.Epoch = "g", "m", a.Queues[0].Epoch
			}
			res, err := c.Pull(context.Background(), req) // no deadline of its own
			require.NoError(t, err, "the broker answers within the pull's wait plus the slack")
			require.Equal(t, equeue.PullNoNewMessage, res.Status)
		})
	}
}

// TestClient_ReconnectForgetsTheToldCap: the cap a join answer told is of
// the server that told it. Once the connection broke and the client
// reached a server again at the same address (a restart, with a cap of
// 3 s), a pull before any new join or heartbeat answer may take its whole
// wait plus the slack: it gets the broker's "no new message", not a
// deadline error at the old server's 100 ms plus the slack.
func TestClient_ReconnectForgetsTheToldCap(t *testing.T) {
	ctx := ctxT(t)
	e1 := openEngine(t, &equeue.Options{MaxPullWait: staleCap})
	require.NoError(t, e1.CreateTopic(ctx, "t", 1))
	s1 := startServer(t, e1, "", nil)
	c := dial(t, s1.addr, nil)
	remote.SetLongPollSlack(c, staleSlack)
	a, err := c.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Equal(t, staleCap, a.MaxPullWait)

	s1.stop()
	e2 := openEngine(t, &equeue.Options{MaxPullWait: staleWait})
	require.NoError(t, e2.CreateTopic(ctx, "t", 1))
	startServer(t, e2, s1.addr, nil)
	eventually(t, 20*time.Second, func() bool {
		_, err = c.Route(ctx, "t")
		return err == nil
	}, "the client reaches the restarted server: %v", func() any { return err })

	res, err := c.Pull(context.Background(), &equeue.PullRequest{Topic: "t", Queue: 0, Wait: staleWait}) // no deadline of its own
	require.NoError(t, err, "the restarted broker answers within the pull's wait plus the slack")
	require.Equal(t, equeue.PullNoNewMessage, res.Status)
}

// countedWaits serves an engine and counts the long-polls it answered:
// the PullMany waits and the heartbeats.
type countedWaits struct {
	*equeue.Engine
	waits, heartbeats atomic.Int32
}

func (b *countedWaits) WaitAny(ctx context.Context, pulls []*equeue.PullRequest, wait time.Duration) error {
	defer b.waits.Add(1)
	return b.Engine.WaitAny(ctx, pulls, wait)
}

func (b *countedWaits) Heartbeat(ctx context.Context, req *equeue.HeartbeatRequest) (equeue.Assignment, error) {
	defer b.heartbeats.Add(1)
	return b.Engine.Heartbeat(ctx, req)
}

// warnings records the log records at Warn and above.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (w *warnings) Handle(_ context.Context, r slog.Record) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, r.Message)
	return nil
}

func (w *warnings) WithAttrs([]slog.Attr) slog.Handler { return w }

func (w *warnings) WithGroup(string) slog.Handler { return w }

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// TestConsumer_WaitsPastTheServerCapAreQuiet: a consumer over remote whose
// pull wait (1 s) and heartbeat interval (800 ms) are longer than the
// server's MaxPullWait (100 ms) and half its session (500 ms) has its
// long-polls answered early by the server, time after time: neither its
// pulls nor its heartbeats fail, nothing is logged at Warn, and a message
// sent meanwhile is handled. So with and without reading ahead.
func TestConsumer_WaitsPastTheServerCapAreQuiet(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ahead int
	}{
		{"reading ahead", 0},
		{"not reading ahead", -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			b := &countedWaits{Engine: openEngine(t, &equeue.Options{MaxPullWait: staleCap, SessionTimeout: time.Second})}
			require.NoError(t, b.CreateTopic(ctx, "t", 2))
			srv, err := remote.NewBackendServer(b, nil)
			require.NoError(t, err)
			w := &warnings{}
			c := dial(t, serve(t, srv, "").addr, &remote.ClientOptions{PullAhead: tc.ahead, Logger: slog.New(w)})
			col := newCollector()
			startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Handler: col.handler("a"), PullWait: time.Second, HeartbeatInterval: 800 * time.Millisecond, Logger: slog.New(w)})
			eventually(t, 30*time.Second, func() bool { return b.waits.Load() >= 10 && b.heartbeats.Load() >= 4 },
				"the server answers long-polls at its cap: %d pull waits, %d heartbeats",
				func() any { return b.waits.Load() }, func() any { return b.heartbeats.Load() })
			_, err = c.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m")}}})
			require.NoError(t, err)
			eventually(t, 30*time.Second, func() bool { return col.has("m") }, "the message is handled")
			require.Empty(t, w.all(), "no warnings from the consumer or its client")
		})
	}
}
