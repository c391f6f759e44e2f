package remote

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
)

// callbackSite is a way to have a callback of the client run: start calls
// AppendAsync on c (a *Client or *ClusterClient) with cb, and does what
// makes cb run on the goroutine the site names.
type callbackSite struct {
	dial  func(t *testing.T) reentryClient
	start func(t *testing.T, c reentryClient, cb func(equeue.AppendResult, error))
}

// callbackSites names each place a callback of a Client or a
// ClusterClient runs at. Each counts the callback in progress: without
// that count, RunsCallback reads false in the callback, and a Close from
// it waits for the callback itself.
func callbackSites() map[string]callbackSite {
	client := func(t *testing.T) reentryClient {
		addr, _ := serveFake(t, firstAnsweredBroker{})
		c, err := Dial(addr, nil)
		require.NoError(t, err)
		return c
	}
	holding := func(t *testing.T) reentryClient {
		c, err := Dial(serveHolding(t), nil)
		require.NoError(t, err)
		return c
	}
	cluster := func(leaderKnown bool) func(t *testing.T) reentryClient {
		return func(t *testing.T) reentryClient {
			addr, _ := serveFake(t, firstAnsweredBroker{})
			cc, err := DialCluster([]string{addr}, nil)
			require.NoError(t, err)
			if leaderKnown {
				cc.redirect(addr, addr)
			}
			return cc
		}
	}
	async := func(_ *testing.T, c reentryClient, cb func(equeue.AppendResult, error)) {
		c.AppendAsync(context.Background(), reentryReq, cb)
	}
	var noCtx context.Context // a nil context, refused at once
	return map[string]callbackSite{
		"Client/refused at once": {dial: client, start: func(_ *testing.T, c reentryClient, cb func(equeue.AppendResult, error)) {
			go c.AppendAsync(context.Background(), nil, cb)
		}},
		"Client/answered on the stream (reader)": {dial: client, start: async},
		"Client/context ended in flight (cancelled)": {dial: holding, start: func(t *testing.T, c reentryClient, cb func(equeue.AppendResult, error)) {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			c.AppendAsync(ctx, reentryReq, cb)
			untilTrue(t, func() bool { return inFlight(c.(*Client), 1) }, "the append is in flight")
			cancel()
		}},
		"Client/unary call (caller's metadata)": {dial: client, start: func(_ *testing.T, c reentryClient, cb func(equeue.AppendResult, error)) {
			c.AppendAsync(metadata.AppendToOutgoingContext(context.Background(), "trace", "1"), reentryReq, cb)
		}},
		"ClusterClient/refused at once": {dial: cluster(true), start: func(_ *testing.T, c reentryClient, cb func(equeue.AppendResult, error)) {
			go c.AppendAsync(noCtx, reentryReq, cb)
		}},
		"ClusterClient/answered on a node's stream": {dial: cluster(true), start: async},
		"ClusterClient/aside (leader unknown)":      {dial: cluster(false), start: async},
	}
}

// untilTrue polls cond until it holds, failing the test after a generous
// bound.
func untilTrue(t *testing.T, cond func() bool, what string) {
	t.Helper()
	require.Eventually(t, cond, time.Minute, time.Millisecond, what)
}

// callbackRunner is a client that says whether it runs a callback.
type callbackRunner interface {
	reentryClient
	RunsCallback() bool
}

func TestRunsCallback_TrueInTheCallbackOfEverySite(t *testing.T) {
	for name, site := range callbackSites() {
		t.Run(name, func(t *testing.T) {
			c := site.dial(t).(callbackRunner)
			require.False(t, c.RunsCallback(), "no callback runs yet")
			type seen struct {
				runs bool
				err  error // Close's
			}
			got := make(chan seen, 1)
			site.start(t, c, func(equeue.AppendResult, error) {
				runs := c.RunsCallback()
				got <- seen{runs: runs, err: c.Close()}
			})
			s := within(t, got, "the callback")
			assert.True(t, s.runs, "RunsCallback in the callback")
			assert.NoError(t, s.err, "Close from the callback")
			assert.False(t, c.RunsCallback(), "not on the test's goroutine")
			require.NoError(t, within(t, closeAsync(c), "Close after the callback"))
		})
	}
}

// closeAsync closes c on a goroutine of its own: a Close that waits for
// itself fails the test (within) instead of hanging it.
func closeAsync(c reentryClient) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.Close() }()
	return done
}

// While a callback runs on a goroutine of the client, another goroutine
// (which must read its number to tell) still runs none.
func TestRunsCallback_FalseElsewhereWhileACallbackRuns(t *testing.T) {
	for name, dial := range reentryClients() {
		t.Run(name, func(t *testing.T) {
			addr, _ := serveFake(t, firstAnsweredBroker{})
			c := dial(t, addr).(callbackRunner)
			defer func() { require.NoError(t, within(t, closeAsync(c), "Close")) }()
			in, release := make(chan bool, 1), make(chan struct{})
			c.AppendAsync(context.Background(), reentryReq, func(equeue.AppendResult, error) {
				in <- c.RunsCallback()
				<-release
			})
			require.True(t, within(t, in, "the callback"))
			assert.False(t, c.RunsCallback(), "the test's goroutine runs no callback")
			close(release)
		})
	}
}
