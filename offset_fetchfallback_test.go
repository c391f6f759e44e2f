package equeue_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// failThenHoldReads is a memory store that, once armed, fails the first
// read of queue q and holds the second until released: a start from a
// time whose search before the group's locks failed, searched again under
// them, slowly.
type failThenHoldReads struct {
	*store.Memory
	q store.QueueID

	mu      sync.Mutex
	reads   int // reads of q since arm; -1: not armed
	inRead  chan struct{}
	release chan struct{}
}

func (s *failThenHoldReads) arm() {
	s.mu.Lock()
	s.reads, s.inRead, s.release = 0, make(chan struct{}), make(chan struct{})
	s.mu.Unlock()
}

func (s *failThenHoldReads) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	s.mu.Lock()
	n := -1
	if s.reads >= 0 && q == s.q {
		s.reads++
		n = s.reads
	}
	in, release := s.inRead, s.release
	s.mu.Unlock()
	switch n {
	case 1:
		return nil, errors.New("injected read failure")
	case 2:
		close(in)
		<-release
	}
	return s.Memory.Read(q, from, to, max, maxBytes)
}

// TestFetchOffsets_TimeStartSearchedUnderTheLocksStallsNoListing: a start
// from a time that the search before the group's locks could not find (a
// failed read) is searched again under them; the group is frozen across
// that search (groupfreeze.go), so a listing of the groups and a heartbeat
// of another member answer while its read is held, and the fetch then
// starts at the right offset.
func TestFetchOffsets_TimeStartSearchedUnderTheLocksStallsNoListing(t *testing.T) {
	ctx := ctxT(t)
	s := &failThenHoldReads{Memory: store.NewMemory(), q: firstTopicQueue0, reads: -1}
	e, err := equeue.Open("", &equeue.Options{Store: s, Retention: equeue.RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a", "b")})
	require.NoError(t, err)
	from := time.Now()
	time.Sleep(2 * time.Millisecond) // later records are stored after from
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("c", "d")})
	require.NoError(t, err)

	join := func(member string) equeue.Assignment {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "stamp", Member: member, Incarnation: member,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromTimestamp, FromTime: from})
		require.NoError(t, err)
		return a
	}
	a := join("m")
	require.Len(t, a.Queues, 1)
	other := join("n") // owns nothing: one queue, two members
	require.Empty(t, other.Queues)

	s.arm()
	type fetched struct {
		ocs []equeue.OffsetCommit
		err error
	}
	done := make(chan fetched, 1)
	go func() {
		ocs, err := e.FetchOffsets(ctx, "stamp", "m", a.Queues)
		done <- fetched{ocs, err}
	}()
	select {
	case <-s.inRead:
	case f := <-done:
		require.FailNow(t, "the fetch did not search again under the group's locks", "%+v %v", f.ocs, f.err)
	}

	// While the search under the locks is held, the group answers.
	answered := make(chan [2]error, 1)
	go func() {
		_, lerr := e.Groups(ctx)
		_, herr := e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "stamp", Member: "n", Incarnation: "n"})
		answered <- [2]error{lerr, herr}
	}()
	select {
	case errs := <-answered:
		assert.NoError(t, errs[0], "Groups")
		assert.NoError(t, errs[1], "Heartbeat")
		close(s.release)
	case <-time.After(20 * time.Second): // a wait for the answers, not a bound on them
		close(s.release)
		<-answered
		require.FailNow(t, "the listing or the heartbeat waited for the fetch's store read")
	}
	f := <-done
	require.NoError(t, f.err)
	require.Len(t, f.ocs, 1)
	assert.Equal(t, int64(2), f.ocs[0].Offset, "the first record stored at or after the start time")
}
