package equeue_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestGroup_LagBeforeStartFollowsConsumeFrom: until a group has an offset
// in a queue, Group reports as lag what the group will consume there,
// which its ConsumeFrom decides: every stored message from the earliest,
// none from the latest, those from its time with a timestamp. The lag
// does not change when a member fetches its start (FetchOffsets stores
// it). It counted from the queue's first offset whatever the setting, so
// a group consuming from the latest message showed every stored message
// as lag until its first member was granted the queue.
func TestGroup_LagBeforeStartFollowsConsumeFrom(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, kind, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			for range 2 {
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{
					{Body: []byte("a")}, {Body: []byte("b")}, {Body: []byte("c")}}})
				require.NoError(t, err)
			}
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 3, Max: 1})
			require.NoError(t, err)
			require.Len(t, res.Messages, 1)
			mark := res.Messages[0].StoredAt

			for _, tc := range []struct {
				group string
				from  equeue.ConsumeFrom
				want  int64 // -1: whatever the start fetched says
			}{
				{"default", equeue.ConsumeFromDefault, 6},
				{"earliest", equeue.ConsumeFromEarliest, 6},
				{"latest", equeue.ConsumeFromLatest, 0},
				{"stamp", equeue.ConsumeFromTimestamp, -1},
			} {
				t.Run(tc.group, func(t *testing.T) {
					a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: tc.group, Member: "m", Incarnation: "i",
						Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: tc.from, FromTime: mark})
					require.NoError(t, err)
					before := queueRow(t, e, tc.group)
					assert.Equal(t, int64(-1), before.Committed, "no offset before the start is fetched")

					var grants []equeue.Grant
					for _, g := range a.Queues {
						if g.Topic == "t" {
							grants = append(grants, g)
						}
					}
					require.Len(t, grants, 1)
					offs, err := e.FetchOffsets(ctx, tc.group, "m", grants)
					require.NoError(t, err)
					require.Len(t, offs, 1)
					after := queueRow(t, e, tc.group)
					require.Equal(t, offs[0].Offset, after.Committed, "the start is stored")

					assert.Equal(t, after.Lag, before.Lag, "lag before the start is what the group consumes from it")
					assert.Equal(t, after.MaxOffset-after.Committed, before.Lag)
					if tc.want >= 0 {
						assert.Equal(t, tc.want, before.Lag)
					}
				})
			}
		})
	}
}

// queueRow returns group's row of queue t/0.
func queueRow(t *testing.T, e *equeue.Engine, group string) equeue.GroupQueueInfo {
	t.Helper()
	g, err := e.Group(ctxT(t), group)
	require.NoError(t, err)
	for _, q := range g.Queues {
		if q.QueueRef == (equeue.QueueRef{Topic: "t", Queue: 0}) {
			return q
		}
	}
	require.FailNow(t, "no row of t/0", "%+v", g.Queues)
	return equeue.GroupQueueInfo{}
}

// TestGroupInfo_QueueLags: each queue once, in the order of its first row,
// with the largest lag of its rows (a broadcasting group's slowest
// member); TotalLag adds them up.
func TestGroupInfo_QueueLags(t *testing.T) {
	q0, q1 := equeue.QueueRef{Topic: "t", Queue: 0}, equeue.QueueRef{Topic: "t", Queue: 1}
	g := equeue.GroupInfo{Model: equeue.Broadcasting, Queues: []equeue.GroupQueueInfo{
		{QueueRef: q1, Owner: "a", Lag: 2},
		{QueueRef: q0, Owner: "a", Lag: 0},
		{QueueRef: q1, Owner: "b", Lag: 5},
		{QueueRef: q0, Owner: "b", Lag: 3},
		{QueueRef: q1, Owner: "c", Lag: 4},
	}}
	assert.Equal(t, []equeue.QueueLag{{QueueRef: q1, Lag: 5}, {QueueRef: q0, Lag: 3}}, g.QueueLags())
	assert.Equal(t, int64(8), g.TotalLag())
	assert.Empty(t, equeue.GroupInfo{}.QueueLags())
	assert.Zero(t, equeue.GroupInfo{}.TotalLag())
}

// heldReads is a memory store that, once armed, holds the first read of
// queue q until released: a slow store read, at a known point.
type heldReads struct {
	*store.Memory
	q store.QueueID

	mu      sync.Mutex
	armed   bool
	inRead  chan struct{} // closed when the held read began
	release chan struct{} // closed to let it go on
}

func (s *heldReads) arm() {
	s.mu.Lock()
	s.armed, s.inRead, s.release = true, make(chan struct{}), make(chan struct{})
	s.mu.Unlock()
}

func (s *heldReads) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	s.mu.Lock()
	hold := s.armed && q == s.q
	if hold {
		s.armed = false
	}
	in, release := s.inRead, s.release
	s.mu.Unlock()
	if hold {
		close(in)
		<-release
	}
	return s.Memory.Read(q, from, to, max, maxBytes)
}

// TestGroup_LagFromATimeDoesNotHoldUpCommits: the lag of a group that
// starts from a timestamp and has no offset yet is found by searching the
// store, which metrics scrapes (Groups) do on every collection. A slow
// read there does not hold up the group's members: a commit goes through
// while the search waits. The search ran under the group's lock, so the
// commit waited for it.
func TestGroup_LagFromATimeDoesNotHoldUpCommits(t *testing.T) {
	ctx := ctxT(t)
	s := &heldReads{Memory: store.NewMemory(), q: firstTopicQueue0}
	e, err := equeue.Open("", &equeue.Options{Store: s})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs("a", "b", "c")})
	require.NoError(t, err)
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "stamp", Member: "m", Incarnation: "i",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromTimestamp, FromTime: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)

	s.arm()
	listed := make(chan error, 1)
	go func() {
		_, err := e.Groups(ctx)
		listed <- err
	}()
	commitWhileHeld(t, e, s, "stamp", a.Queues[0], 1)
	require.NoError(t, <-listed)
	assert.Equal(t, int64(1), queueRow(t, e, "stamp").Committed)
}
