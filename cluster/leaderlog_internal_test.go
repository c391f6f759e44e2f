package cluster

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"
)

// gatedLogs is an in-memory log store whose StoreLogs waits at a gate
// while it is closed, and fails with failWith once that is set.
type gatedLogs struct {
	*raft.InmemStore
	mu       sync.Mutex
	gate     chan struct{} // nil: open
	entered  chan struct{} // a StoreLogs reached the gate
	failWith atomic.Pointer[error]
	calls    atomic.Int32
}

func newGatedLogs() *gatedLogs {
	return &gatedLogs{InmemStore: raft.NewInmemStore(), entered: make(chan struct{}, 64)}
}

func (g *gatedLogs) close() {
	g.mu.Lock()
	g.gate = make(chan struct{})
	g.mu.Unlock()
}

func (g *gatedLogs) open() {
	g.mu.Lock()
	if g.gate != nil {
		close(g.gate)
		g.gate = nil
	}
	g.mu.Unlock()
}

func (g *gatedLogs) StoreLogs(logs []*raft.Log) error {
	g.calls.Add(1)
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		g.entered <- struct{}{}
		<-gate
	}
	if p := g.failWith.Load(); p != nil {
		return *p
	}
	return g.InmemStore.StoreLogs(logs)
}

func (g *gatedLogs) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

func entries(from, to uint64) []*raft.Log {
	var out []*raft.Log
	for i := from; i <= to; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	return out
}

// returnsWithin runs f and reports whether it returned within d.
func returnsWithin(d time.Duration, f func()) (done <-chan struct{}, returned bool) {
	ch := make(chan struct{})
	go func() { f(); close(ch) }()
	select {
	case <-ch:
		return ch, true
	case <-time.After(d):
		return ch, false
	}
}

func leadingLog(t *testing.T, g *gatedLogs) (*leaderLog, *atomic.Bool) {
	l := newLeaderLog(g)
	leading := new(atomic.Bool)
	leading.Store(true)
	l.setLeading(leading.Load)
	t.Cleanup(func() { g.open(); _ = l.Close() })
	return l, leading
}

func TestLeaderLog_LeaderStoresInTheBackground(t *testing.T) {
	g := newGatedLogs()
	l, _ := leadingLog(t, g)
	require.NoError(t, l.StoreLogs(entries(1, 2)))
	require.NoError(t, l.awaitStored(2))
	g.close()
	// The leader's StoreLogs returns while the write waits at the gate.
	require.NoError(t, l.StoreLogs(entries(3, 5)))
	<-g.entered
	require.NoError(t, l.StoreLogs(entries(6, 6)))

	// Raft reads what it handed over, and its last index.
	var got raft.Log
	require.NoError(t, l.GetLog(4, &got))
	require.Equal(t, []byte{4}, got.Data)
	last, err := l.LastIndex()
	require.NoError(t, err)
	require.EqualValues(t, 6, last)
	inner, err := g.InmemStore.LastIndex()
	require.NoError(t, err)
	require.EqualValues(t, 2, inner, "nothing past the gate is stored yet")

	// Commitment is bounded by what is stored; the FSM waits for it.
	require.EqualValues(t, 2, l.storedBound(6))
	require.EqualValues(t, 1, l.storedBound(1))
	require.NoError(t, l.awaitStored(2))
	done, returned := returnsWithin(50*time.Millisecond, func() { require.NoError(t, l.awaitStored(3)) })
	require.False(t, returned, "awaitStored returned before the entry was stored")

	g.open()
	<-done
	require.NoError(t, l.awaitStored(6))
	require.EqualValues(t, 6, l.storedBound(6))
	inner, err = g.InmemStore.LastIndex()
	require.NoError(t, err)
	require.EqualValues(t, 6, inner)
}

func TestLeaderLog_FollowerWaitsForThePendingWrites(t *testing.T) {
	for _, call := range []struct {
		name string
		do   func(l *leaderLog) error
	}{
		{"GetLog", func(l *leaderLog) error { var out raft.Log; return l.GetLog(1, &out) }},
		{"StoreLogs", func(l *leaderLog) error { return l.StoreLogs(entries(4, 4)) }},
		{"DeleteRange", func(l *leaderLog) error { return l.DeleteRange(3, 3) }},
	} {
		t.Run(call.name, func(t *testing.T) {
			g := newGatedLogs()
			l, leading := leadingLog(t, g)
			require.NoError(t, l.StoreLogs(entries(1, 1)))
			require.NoError(t, l.awaitStored(1))
			g.close()
			require.NoError(t, l.StoreLogs(entries(2, 3)))
			<-g.entered
			leading.Store(false) // deposed with writes on their way
			done, returned := returnsWithin(50*time.Millisecond, func() { require.NoError(t, call.do(l)) })
			require.False(t, returned, "a follower acted before its pending writes were stored")
			g.open()
			<-done
			last, err := g.InmemStore.LastIndex()
			require.NoError(t, err)
			require.GreaterOrEqual(t, last, uint64(2))
		})
	}
}

func TestLeaderLog_ConfigurationIsStoredBeforeItReturns(t *testing.T) {
	g := newGatedLogs()
	l, _ := leadingLog(t, g)
	g.close()
	cfg := entries(1, 2)
	cfg[1].Type = raft.LogConfiguration
	done, returned := returnsWithin(50*time.Millisecond, func() { require.NoError(t, l.StoreLogs(cfg)) })
	require.False(t, returned, "a configuration entry was not stored before StoreLogs returned")
	g.open()
	<-done
	last, err := g.InmemStore.LastIndex()
	require.NoError(t, err)
	require.EqualValues(t, 2, last)
}

func TestLeaderLog_FailedWriteStopsTheLog(t *testing.T) {
	g := newGatedLogs()
	l, leading := leadingLog(t, g)
	disk := errors.New("disk gone")
	g.failWith.Store(&disk)
	require.NoError(t, l.StoreLogs(entries(1, 2)), "handed over: the failure comes later")
	require.ErrorIs(t, l.awaitStored(2), disk)
	require.ErrorIs(t, l.StoreLogs(entries(3, 3)), disk)
	leading.Store(false)
	require.ErrorIs(t, l.StoreLogs(entries(3, 3)), disk)
	require.ErrorIs(t, l.DeleteRange(1, 2), disk)
	require.Equal(t, int32(1), g.calls.Load(), "nothing is written after the failure")
	// An entry that failed to store is never applied.
	f := &fsm{awaitLog: l.awaitStored, log: slog.New(slog.DiscardHandler)}
	out := f.ApplyBatch(entries(1, 1))
	require.ErrorIs(t, out[0].(error), disk)
	require.ErrorIs(t, f.err(), disk)
}

func TestLeaderLog_CloseStoresWhatIsPending(t *testing.T) {
	g := newGatedLogs()
	l := newLeaderLog(g)
	l.setLeading(func() bool { return true })
	g.close()
	require.NoError(t, l.StoreLogs(entries(1, 3)))
	<-g.entered
	closed, returned := returnsWithin(50*time.Millisecond, func() { require.NoError(t, l.Close()) })
	require.False(t, returned, "Close returned before the pending entries were stored")
	g.open()
	<-closed
	last, err := g.InmemStore.LastIndex()
	require.NoError(t, err)
	require.EqualValues(t, 3, last)
	require.ErrorIs(t, l.StoreLogs(entries(4, 4)), errLogClosed)
}

// Both ways the leader sends entries carry the commit index lowered to
// what it stored.
func TestLeaderLog_TransportSendsTheStoredCommitIndex(t *testing.T) {
	seen := make(chan uint64, 4)
	follower := testFollower(t, func(req *raft.AppendEntriesRequest) *raft.AppendEntriesResponse {
		seen <- req.LeaderCommitIndex
		return &raft.AppendEntriesResponse{Success: true, LastLog: req.PrevLogEntry + uint64(len(req.Entries))}
	})
	leader := testLeader(t)
	leader.clamp = func(commit uint64) uint64 { return min(commit, 5) }
	req := func() *raft.AppendEntriesRequest {
		return &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax}, Term: 1,
			PrevLogEntry: 10, PrevLogTerm: 1, LeaderCommitIndex: 10}
	}
	var resp raft.AppendEntriesResponse
	require.NoError(t, leader.AppendEntries("f", follower.LocalAddr(), req(), &resp))
	require.EqualValues(t, 5, <-seen)
	p, err := leader.AppendEntriesPipeline("f", follower.LocalAddr())
	require.NoError(t, err)
	defer p.Close()
	fut, err := p.AppendEntries(req(), &raft.AppendEntriesResponse{})
	require.NoError(t, err)
	require.NoError(t, fut.Error())
	require.EqualValues(t, 5, <-seen)
}
