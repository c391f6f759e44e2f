package remote

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// ClusterClient.RunsCallback took the client's lock and scanned every
// node: it waited for whatever held that lock. It now asks the one set
// the nodes' clients record their callbacks in.
func TestClusterRunsCallback_TakesNoLock(t *testing.T) {
	addr, _ := serveFake(t, firstAnsweredBroker{})
	cc, err := DialCluster([]string{addr}, nil)
	require.NoError(t, err)
	cc.redirect(addr, addr)
	defer func() { require.NoError(t, within(t, closeAsync(cc), "Close")) }()

	in, release := make(chan struct{}), make(chan struct{})
	runs := make(chan bool, 1)
	cc.AppendAsync(context.Background(), reentryReq, func(equeue.AppendResult, error) {
		close(in)
		<-release
		runs <- cc.RunsCallback()
	})
	within(t, in, "the callback")
	cc.mu.Lock()
	close(release)
	answered := within(t, runs, "RunsCallback with the client's lock held")
	cc.mu.Unlock()
	assert.True(t, answered)
}

// Nodes come and go (learned, forgotten) while callbacks ask
// RunsCallback, on a node's goroutine and elsewhere (run with -race).
func TestClusterRunsCallback_WhileNodesComeAndGo(t *testing.T) {
	addr, _ := serveFake(t, firstAnsweredBroker{})
	cc, err := DialCluster([]string{addr}, nil)
	require.NoError(t, err)
	cc.redirect(addr, addr)
	defer func() { require.NoError(t, within(t, closeAsync(cc), "Close")) }()

	stop, churned := make(chan struct{}), make(chan struct{})
	go func() { // learns and forgets nodes (never dialed: connected lazily)
		defer close(churned)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n, err := cc.acquire(fmt.Sprintf("127.0.0.1:%d", 1+i%50))
			if err != nil {
				return
			}
			cc.mu.Lock()
			n.calls--
			cc.forget(n)
			cc.mu.Unlock()
		}
	}()
	const asks = 200
	runs := make(chan bool, 1)
	cc.AppendAsync(context.Background(), reentryReq, func(equeue.AppendResult, error) {
		all := true
		for range asks {
			all = all && cc.RunsCallback()
		}
		runs <- all
	})
	for range asks {
		require.False(t, cc.RunsCallback(), "the test's goroutine runs no callback")
	}
	assert.True(t, within(t, runs, "the callback"), "RunsCallback in a node's callback, every time")
	close(stop)
	within(t, churned, "the churn")
}
