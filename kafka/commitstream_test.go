package kafka_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// everyCommitHeld is a broker each of whose CommitGroupOffsets calls
// waits, before its store write, until the test closes the channel it
// sends on held; all go through once done is closed.
type everyCommitHeld struct {
	kafka.Broker
	held chan chan struct{}
	done chan struct{}
}

func (h *everyCommitHeld) CommitGroupOffsets(ctx context.Context, group string, offsets map[equeue.QueueRef]int64) error {
	release := make(chan struct{})
	select {
	case h.held <- release:
		select {
		case <-release:
		case <-h.done:
		case <-ctx.Done():
		}
	case <-h.done:
	case <-ctx.Done():
	}
	return h.Broker.CommitGroupOffsets(ctx, group, offsets)
}

// TestGroups_CommitStreamDoesNotPutOffExpiry: a member that commits
// without pause, each commit sent before the one before it was stored, no
// longer keeps its group's silent member from expiring. Before, the
// coordinator's tick left the expiry to a later round while commits were
// in flight, but let new ones in meanwhile: with one always in flight,
// the dead member stayed in the group (and its partitions with it) for as
// long as the stream went on. Now the tick that finds commits in flight
// shuts the group's gate: new commits wait, and the member is expired at
// the tick after those in flight were stored, before the waiting ones
// are let in.
func TestGroups_CommitStreamDoesNotPutOffExpiry(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	h := &everyCommitHeld{Broker: e, held: make(chan chan struct{}), done: make(chan struct{})}
	s, addr := serveServer(t, h)
	ba, bb := kclient(t, addr).SeedBrokers()[0], kclient(t, addr).SeedBrokers()[0]
	join := func(b *kgo.Broker, id string, session int32) *kmsg.JoinGroupResponse {
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.MemberID, jg.ProtocolType = "g", id, "consumer"
		jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = session, 300000
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		return requestJoin(ctx, t, b, jg)
	}
	members := func() []string {
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"g"}
		resp, err := ba.Request(ctx, dg)
		require.NoError(t, err)
		var ids []string
		for _, m := range resp.(*kmsg.DescribeGroupsResponse).Groups[0].Members {
			ids = append(ids, m.MemberID)
		}
		return ids
	}

	// a (a session of five minutes) and b (the shortest, a second) share
	// generation 2; b then goes silent.
	ja := join(ba, "", 300000)
	require.Equal(t, int16(0), ja.ErrorCode)
	bJoin := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { bJoin <- join(bb, "", 1000) }()
	require.Eventually(t, func() bool { return len(members()) == 2 }, 30*time.Second, time.Millisecond)
	ja = join(ba, ja.MemberID, 300000)
	require.Equal(t, int16(0), ja.ErrorCode)
	jb := <-bJoin
	require.Equal(t, int16(0), jb.ErrorCode)
	require.Equal(t, ja.Generation, jb.Generation)
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.Generation, sg.MemberID = "g", ja.Generation, ja.MemberID
	_, err := ba.Request(ctx, sg)
	require.NoError(t, err)

	// a commits in a stream over two connections, each commit sent
	// before the one before it was stored, so that one is always in
	// flight, unless a commit waits at the gate a tick shut: then the one
	// in flight is stored.
	conns := [2]*kgo.Broker{
		kclient(t, addr, kgo.RequestTimeoutOverhead(time.Minute)).SeedBrokers()[0],
		kclient(t, addr, kgo.RequestTimeoutOverhead(time.Minute)).SeedBrokers()[0],
	}
	results := [2]chan int16{make(chan int16, 1), make(chan int16, 1)}
	outstanding := map[int]bool{}
	commit := func(k int) {
		outstanding[k] = true
		go func() { results[k%2] <- commitOne(ctx, t, conns[k%2], ja.Generation, ja.MemberID, int64(k%5)) }()
	}
	stored := func(k int) {
		t.Helper()
		delete(outstanding, k)
		require.Equal(t, int16(0), <-results[k%2], "commit %d", k)
	}
	t.Cleanup(func() {
		close(h.done)
		for k := range outstanding {
			<-results[k%2]
		}
	})
	awaited := kafka.CommitsAwaited(s, "g")
	streamCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()

	commit(0)
	inFlight := <-h.held
	shutAt := 0 // the commit that first waited at the shut gate
	for k := 1; ; k++ {
		commit(k)
		var next chan struct{}
		for next == nil {
			select {
			case next = <-h.held:
			case <-poll.C:
				if inFlight != nil && awaited() {
					if shutAt == 0 {
						shutAt = k
					}
					close(inFlight)
					inFlight = nil
					stored(k - 1)
				}
			case <-streamCtx.Done():
				require.Contains(t, members(), jb.MemberID)
				t.Fatalf("%d commits later the silent member was still in the group", k)
			}
		}
		// While next is in flight no tick changes the group: b is gone
		// now only if it expired before next was let in.
		gone := !slices.Contains(members(), jb.MemberID)
		if inFlight != nil {
			close(inFlight)
			stored(k - 1)
		}
		inFlight = next
		if gone {
			require.NotZero(t, shutAt, "b expired with commits in flight")
			// Commit shutAt waited; or it was let in just before the
			// gate shut, and the next one waited.
			assert.LessOrEqual(t, k, shutAt+1, "b expired once the commits in flight were stored")
			assert.Equal(t, []string{ja.MemberID}, members())
			close(inFlight)
			stored(k)
			return
		}
	}
}
