package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// Calls on their way when a node closes all return and leave no goroutine
// behind: many writes (some still in Raft's apply buffer), each ending as
// documented (stored, ErrIndeterminate, ErrClosed or ErrNotLeader), a
// removal and a leadership transfer, on a leader whose voters take its
// entries and on one whose voters refuse them (it commits nothing more).
func TestNode_CloseAnswersEveryCallOnItsWay(t *testing.T) {
	for _, refusing := range []bool{false, true} {
		t.Run(fmt.Sprintf("refusing=%v", refusing), func(t *testing.T) {
			v2, v3 := newRefusingVoter(t), newRefusingVoter(t)
			v2.accepting.Store(true)
			v3.accepting.Store(true)
			leaks := goleak.IgnoreCurrent()
			n := openWithVoters(t, v2, v3)
			require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
			require.NoError(t, n.CreateTopic(context.Background(), "t", 4))
			if refusing {
				v2.accepting.Store(false)
				v3.accepting.Store(false)
			}

			const senders = 64
			results := make(chan error, senders+2)
			started := make(chan struct{}, senders)
			for range senders {
				go func() {
					started <- struct{}{}
					var err error
					for err == nil {
						_, err = n.Append(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
					}
					results <- fmt.Errorf("append: %w", err)
				}()
			}
			for range senders {
				<-started
			}
			// Administration: any outcome, as long as it comes.
			go func() { _ = n.RemoveServer(context.Background(), "n3"); results <- nil }()
			go func() { _ = n.TransferLeadership(context.Background(), "n2"); results <- nil }()
			if refusing {
				require.Eventually(t, func() bool { return v2.refused() > 0 && v3.refused() > 0 }, 30*time.Second, 10*time.Millisecond)
			}

			requireCloses(t, n)
			for range senders + 2 {
				select {
				case err := <-results:
					if err == nil {
						continue
					}
					require.True(t, errors.Is(err, equeue.ErrIndeterminate) || errors.Is(err, equeue.ErrClosed) || errors.Is(err, equeue.ErrNotLeader),
						"a call on its way when the node closed ends with an outcome its documentation gives: %v", err)
				case <-time.After(60 * time.Second):
					t.Fatal("a call on its way when the node closed did not return")
				}
			}
			goleak.VerifyNone(t, leaks)
		})
	}
}

// configGate is a Raft log store whose writes of a configuration entry
// wait, once armed, until it is opened: the leader's Raft loop stores
// such an entry itself (leaderLog), so it stops taking the entries handed
// to it, which stay in its apply buffer.
type configGate struct {
	raft.LogStore
	mu      sync.Mutex
	armed   bool
	blocked chan struct{} // closed once a write waits
	open    chan struct{}
}

func newConfigGate(inner raft.LogStore) *configGate {
	return &configGate{LogStore: inner, blocked: make(chan struct{}), open: make(chan struct{})}
}

func (g *configGate) StoreLogs(logs []*raft.Log) error {
	g.mu.Lock()
	held := g.armed && slices.ContainsFunc(logs, func(l *raft.Log) bool { return l.Type == raft.LogConfiguration })
	if held {
		g.armed = false
		close(g.blocked)
	}
	g.mu.Unlock()
	if held {
		<-g.open
	}
	return g.LogStore.StoreLogs(logs)
}

func (g *configGate) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

func (g *configGate) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed = true
}

// Writes still in Raft's apply buffer when Raft shuts down are never
// answered by Raft. Close ends their waits (such a write ends with
// ErrIndeterminate) and leaves no goroutine waiting on them: here the
// leader's Raft loop is held storing a configuration entry until Raft is
// shut down, so every write made meanwhile, and Close's own barrier, stay
// in its buffer, and so does a leadership transfer asked meanwhile.
func TestNode_CloseLeavesNoWaitForEntriesRaftNeverAnswers(t *testing.T) {
	v2, v3 := newRefusingVoter(t), newRefusingVoter(t)
	v2.accepting.Store(true)
	v3.accepting.Store(true)
	leaks := goleak.IgnoreCurrent()
	var gate *configGate
	var admitted atomic.Int64
	n := openWithVotersOpts(t, v2, v3, func(o *Options) {
		o.logStoreHook = func(inner raft.LogStore) raft.LogStore { gate = newConfigGate(inner); return gate }
		o.admitHook = func(*store.Batch) error { admitted.Add(1); return nil }
	})
	require.Eventually(t, func() bool { _, err := n.Engine(); return err == nil }, 30*time.Second, 10*time.Millisecond)
	require.NoError(t, n.CreateTopic(context.Background(), "t", 1))

	gate.arm()
	removed := make(chan error, 1)
	go func() { removed <- n.RemoveServer(context.Background(), "n3") }()
	<-gate.blocked
	before := admitted.Load()
	const senders = 8
	appended := make(chan error, senders)
	for range senders {
		go func() {
			_, err := n.Append(context.Background(), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
			appended <- err
		}()
	}

	// Writes on their way to Raft (the engine's writer admits them, then
	// hands them over).
	require.Eventually(t, func() bool { return admitted.Load() > before }, 30*time.Second, time.Millisecond)
	// A leadership transfer queued for the held loop.
	transferred := make(chan error, 1)
	go func() { transferred <- n.TransferLeadership(context.Background(), "n2") }()
	require.Eventually(t, func() bool { return n.lease.transfers.Load() > 0 }, 30*time.Second, time.Millisecond)

	closed := make(chan error, 1)
	go func() { closed <- n.Close() }()
	require.Eventually(t, func() bool { return n.raft.State() == raft.Shutdown }, 60*time.Second, 10*time.Millisecond)
	close(gate.open)
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("Close did not return")
	}
	for range senders {
		select {
		case err := <-appended:
			// ErrIndeterminate in Raft's buffer; refused when the tenure
			// ended before the write reached Raft.
			require.True(t, errors.Is(err, equeue.ErrIndeterminate) || errors.Is(err, equeue.ErrNotLeader) || errors.Is(err, equeue.ErrClosed),
				"a write on its way when the node closed ends with an outcome its documentation gives: %v", err)
		case <-time.After(60 * time.Second):
			t.Fatal("a write on its way when the node closed did not return")
		}
	}
	select {
	case <-removed:
	case <-time.After(60 * time.Second):
		t.Fatal("a removal on its way when the node closed did not return")
	}
	select {
	case err := <-transferred:
		require.ErrorIs(t, err, raft.ErrRaftShutdown, "a transfer Raft shut down with is not made")
	case <-time.After(60 * time.Second):
		t.Fatal("a leadership transfer on its way when the node closed did not return")
	}
	goleak.VerifyNone(t, leaks)
}
