package kafka_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// heldCommits is a broker whose next CommitGroupOffsets, once armed,
// waits until the test lets it go: a commit the coordinator checked is
// held before its store write.
type heldCommits struct {
	kafka.Broker
	mu      sync.Mutex
	entered chan struct{}
	release chan struct{}
}

func (h *heldCommits) arm() (entered, release chan struct{}) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.entered, h.release = make(chan struct{}), make(chan struct{})
	return h.entered, h.release
}

func (h *heldCommits) CommitGroupOffsets(ctx context.Context, group string, offsets map[equeue.QueueRef]int64) error {
	h.mu.Lock()
	entered, release := h.entered, h.release
	h.entered, h.release = nil, nil
	h.mu.Unlock()
	if entered != nil {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	return h.Broker.CommitGroupOffsets(ctx, group, offsets)
}

// joinAs sends a classic JoinGroup for group "g" on b with the member ID
// given ("" for a new member).
func joinAs(ctx context.Context, t *testing.T, b *kgo.Broker, id string) *kmsg.JoinGroupResponse {
	t.Helper()
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.MemberID, jg.ProtocolType = "g", id, "consumer"
	jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis = 30000, 30000
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	return requestJoin(ctx, t, b, jg)
}

// commitOne commits offset off of partition 0 of topic t for group "g".
func commitOne(ctx context.Context, t *testing.T, b *kgo.Broker, generation int32, member string, off int64) int16 {
	t.Helper()
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation, oc.MemberID = "g", generation, member
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "t"
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: off, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, oct)
	resp, err := b.Request(ctx, namedCommit{oc})
	require.NoError(t, err)
	return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
}

// TestGroups_CommitCheckedBeforeARebalanceLandsBeforeIt: a commit the
// coordinator accepted from a member of generation 1 is stored before
// generation 2 begins, as Kafka's coordinator checks and appends a commit
// under the group's lock. Before, the check and the store write were
// apart: a rebalance could hand the partition to another member, which
// committed further, and the first member's older commit then landed and
// moved the group's offset back.
func TestGroups_CommitCheckedBeforeARebalanceLandsBeforeIt(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	hb := &heldCommits{Broker: e}
	s, addr := serveServer(t, hb)
	ba, bb := kclient(t, addr).SeedBrokers()[0], kclient(t, addr).SeedBrokers()[0]
	ja := joinAlone(ctx, t, ba, "g")
	awaited := kafka.CommitsAwaited(s, "g")

	// a's commit of offset 1 is checked (generation 1) and held before
	// its store write.
	entered, release := hb.arm()
	aCommit := make(chan int16, 1)
	go func() { aCommit <- commitOne(ctx, t, kclient(t, addr).SeedBrokers()[0], ja.Generation, ja.MemberID, 1) }()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("a's commit never reached the store")
	}

	// b joins; a rejoins, which completes the join phase: generation 2.
	bJoin := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { bJoin <- joinAs(ctx, t, bb, "") }()
	require.Eventually(t, func() bool {
		h := kmsg.NewPtrHeartbeatRequest()
		h.Group, h.Generation, h.MemberID = "g", ja.Generation, ja.MemberID
		resp, err := ba.Request(ctx, h)
		require.NoError(t, err)
		return resp.(*kmsg.HeartbeatResponse).ErrorCode == 27 // b is joining
	}, 30*time.Second, time.Millisecond)
	aJoin := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { aJoin <- joinAs(ctx, t, ba, ja.MemberID) }()

	// The new generation waits for a's commit (the fix); before, b was
	// answered at once.
	var jb *kmsg.JoinGroupResponse
	require.Eventually(t, func() bool {
		select {
		case jb = <-bJoin:
			return true
		default:
			return awaited()
		}
	}, 30*time.Second, time.Millisecond)
	syncB := func() {
		ja2 := <-aJoin
		require.Equal(t, int16(0), ja2.ErrorCode)
		require.Equal(t, int16(0), jb.ErrorCode)
		sa := kmsg.NewPtrSyncGroupRequest()
		sa.Group, sa.Generation, sa.MemberID = "g", ja2.Generation, ja2.MemberID
		sa.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: jb.MemberID, MemberAssignment: []byte("p0")}}
		_, err := ba.Request(ctx, sa)
		require.NoError(t, err)
		sb := kmsg.NewPtrSyncGroupRequest()
		sb.Group, sb.Generation, sb.MemberID = "g", jb.Generation, jb.MemberID
		resp, err := bb.Request(ctx, sb)
		require.NoError(t, err)
		require.Equal(t, []byte("p0"), resp.(*kmsg.SyncGroupResponse).MemberAssignment)
		// b, which has partition 0 now, commits past a's offset.
		require.Equal(t, int16(0), commitOne(ctx, t, bb, jb.Generation, jb.MemberID, 3))
	}
	if jb != nil {
		syncB() // b commits while a's older commit is still in flight
		close(release)
	} else {
		close(release)
		jb = <-bJoin
		syncB()
	}
	assert.Equal(t, int16(0), <-aCommit, "a's commit was checked in generation 1")

	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(3), offs[equeue.QueueRef{Topic: "t", Queue: 0}], "the new owner's commit is the last")
}

// TestGroups_CommitAwaitingSyncIsRebalanceInProgress: a member of the
// current generation whose group awaits the leader's SyncGroup
// (CompletingRebalance) is refused its commit with REBALANCE_IN_PROGRESS
// and nothing is stored, as Kafka's ClassicGroup.validateOffsetCommit
// has it; in PreparingRebalance its commit is taken (a consumer commits
// what it processed when a rebalance begins), and so it is once the group
// is Stable.
func TestGroups_CommitAwaitingSyncIsRebalanceInProgress(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	ba, bb := kclient(t, addr).SeedBrokers()[0], kclient(t, addr).SeedBrokers()[0]
	j := joinAs(ctx, t, ba, "")
	require.Equal(t, int16(0), j.ErrorCode)
	assert.Equal(t, int16(27), commitOne(ctx, t, ba, j.Generation, j.MemberID, 1), "REBALANCE_IN_PROGRESS: awaiting SyncGroup")
	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Empty(t, offs, "nothing stored")

	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.Generation, sg.MemberID = "g", j.Generation, j.MemberID
	_, err = ba.Request(ctx, sg)
	require.NoError(t, err)
	assert.Equal(t, int16(0), commitOne(ctx, t, ba, j.Generation, j.MemberID, 2), "Stable")

	bJoin := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { bJoin <- joinAs(ctx, t, bb, "") }()
	require.Eventually(t, func() bool {
		h := kmsg.NewPtrHeartbeatRequest()
		h.Group, h.Generation, h.MemberID = "g", j.Generation, j.MemberID
		resp, err := ba.Request(ctx, h)
		require.NoError(t, err)
		return resp.(*kmsg.HeartbeatResponse).ErrorCode == 27 // b is joining
	}, 30*time.Second, time.Millisecond)
	assert.Equal(t, int16(0), commitOne(ctx, t, ba, j.Generation, j.MemberID, 3), "PreparingRebalance")
	require.Equal(t, int16(0), joinAs(ctx, t, ba, j.MemberID).ErrorCode)
	require.Equal(t, int16(0), (<-bJoin).ErrorCode)
	offs, err = e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 3}, offs)
}

// TestGroups_CommitAwaitedStallsOnlyItsGroup: a new generation that waits
// for a commit in flight holds up its own group only. Before, it waited
// under the coordinator's lock, so while one group's commit hung in its
// store write, every other group's JoinGroup and Heartbeat waited too.
func TestGroups_CommitAwaitedStallsOnlyItsGroup(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	hb := &heldCommits{Broker: e}
	s, addr := serveServer(t, hb)
	ba := kclient(t, addr).SeedBrokers()[0]
	ja := joinAlone(ctx, t, ba, "g")
	awaited := kafka.CommitsAwaited(s, "g")

	entered, release := hb.arm()
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	aCommit := make(chan int16, 1)
	go func() {
		aCommit <- commitOne(ctx, t, kclient(t, addr, kgo.RequestTimeoutOverhead(time.Minute)).SeedBrokers()[0], ja.Generation, ja.MemberID, 1)
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("a's commit never reached the store")
	}
	// a joins again: the join phase completes at once, and generation 2
	// waits for a's commit.
	aJoin := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { aJoin <- joinAs(ctx, t, kclient(t, addr).SeedBrokers()[0], ja.MemberID) }()
	require.Eventually(t, awaited, 30*time.Second, time.Millisecond)

	// Another group is served meanwhile (before, this join and heartbeat
	// waited until the held commit's store write returned).
	hctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	bh := kclient(t, addr).SeedBrokers()[0]
	jh := joinAlone(hctx, t, bh, "h")
	hbr := kmsg.NewPtrHeartbeatRequest()
	hbr.Group, hbr.Generation, hbr.MemberID = "h", jh.Generation, jh.MemberID
	resp, err := bh.Request(hctx, hbr)
	require.NoError(t, err)
	assert.Equal(t, int16(0), resp.(*kmsg.HeartbeatResponse).ErrorCode)
	require.True(t, awaited(), "g's generation still waits for the held commit")
	select {
	case <-aJoin:
		t.Fatal("g's new generation began before the commit checked in the old one was stored")
	default:
	}

	letGo()
	assert.Equal(t, int16(0), <-aCommit)
	ja2 := <-aJoin
	require.Equal(t, int16(0), ja2.ErrorCode)
	assert.Equal(t, ja.Generation+1, ja2.Generation)
	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(1), offs[equeue.QueueRef{Topic: "t", Queue: 0}])
}

// TestConsumerGroup_CommitAwaitedStallsOnlyItsGroup: in a KIP-848 group
// too, a partition given to a member waits for its previous holder's
// commit in flight, and that holds up the group's own heartbeat only, not
// other groups' heartbeats and joins.
func TestConsumerGroup_CommitAwaitedStallsOnlyItsGroup(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	hb := &heldCommits{Broker: e}
	s, addr := serveServer(t, hb)
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	a := &cgMember{t: t, b: b, id: "member-a"}
	require.Equal(t, int16(0), a.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, []int32{0}, a.owned)
	awaited := kafka.CommitsAwaited(s, "g")

	// a commits, held before its store write, and leaves.
	entered, release := hb.arm()
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	aCommit := make(chan int16, 1)
	go func() {
		aCommit <- commitOne(ctx, t, kclient(t, addr, kgo.RequestTimeoutOverhead(time.Minute)).SeedBrokers()[0], a.epoch, a.id, 1)
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("a's commit never reached the store")
	}
	require.Equal(t, int16(0), (&cgMember{t: t, b: b, id: a.id, epoch: -1}).beat(ctx, tid, nil, false).ErrorCode)

	// c joins: partition 0 is free, but goes to c only once a's commit
	// was stored.
	cm := &cgMember{t: t, b: kclient(t, addr, kgo.RequestTimeoutOverhead(time.Minute)).SeedBrokers()[0], id: "member-c"}
	cJoin := make(chan int16, 1)
	go func() { cJoin <- cm.beat(ctx, tid, []string{"t"}, false).ErrorCode }()
	require.Eventually(t, awaited, 30*time.Second, time.Millisecond)

	// Other groups are served meanwhile (before, they waited until the
	// held commit's store write returned).
	hctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	bh := kclient(t, addr).SeedBrokers()[0]
	h := &cgMember{t: t, b: bh, group: "h", id: "member-h"}
	require.Equal(t, int16(0), h.beat(hctx, tid, []string{"t"}, false).ErrorCode)
	assert.Equal(t, []int32{0}, h.owned, "group h has its own partitions")
	joinAlone(hctx, t, bh, "classic")
	require.True(t, awaited(), "c's heartbeat still waits for the held commit")
	select {
	case <-cJoin:
		t.Fatal("c was answered before a's commit was stored")
	default:
	}

	letGo()
	assert.Equal(t, int16(0), <-aCommit)
	require.Equal(t, int16(0), <-cJoin)
	assert.Equal(t, []int32{0}, cm.owned, "c has the partition a released")
	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(1), offs[equeue.QueueRef{Topic: "t", Queue: 0}])
}

// TestGroups_CommitToAnUnknownGroupLandsBeforeItsFirstGeneration: a
// commit without a generation (-1, a standalone consumer's or an admin
// tool's) to a group the coordinator does not know yet is stored before a
// JoinGroup that makes the group begins its first generation. Before, it
// entered no gate: the first member fetched the offsets without it,
// committed further, and the older commit then landed and moved the
// group's offset back.
func TestGroups_CommitToAnUnknownGroupLandsBeforeItsFirstGeneration(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for range 5 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	hb := &heldCommits{Broker: e}
	s, addr := serveServer(t, hb)
	b := kclient(t, addr).SeedBrokers()[0]

	entered, release := hb.arm()
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo)
	adminCommit := make(chan int16, 1)
	go func() {
		adminCommit <- commitOne(ctx, t, kclient(t, addr, kgo.RequestTimeoutOverhead(time.Minute)).SeedBrokers()[0], -1, "", 1)
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("the commit never reached the store")
	}

	// A member joins the group, which the coordinator makes now.
	joined := make(chan *kmsg.JoinGroupResponse, 1)
	go func() {
		joined <- joinAs(ctx, t, kclient(t, addr, kgo.RequestTimeoutOverhead(time.Minute)).SeedBrokers()[0], "")
	}()
	awaited := kafka.CommitsAwaited(s, "g")
	var j *kmsg.JoinGroupResponse
	require.Eventually(t, func() bool {
		select {
		case j = <-joined:
			return true // before the fix: answered with the commit in flight
		default:
			return awaited()
		}
	}, 30*time.Second, time.Millisecond)
	if j != nil {
		// The member has its generation: it syncs, reads the offsets
		// (without the held commit) and commits further.
		sg := kmsg.NewPtrSyncGroupRequest()
		sg.Group, sg.Generation, sg.MemberID = "g", j.Generation, j.MemberID
		_, err := b.Request(ctx, sg)
		require.NoError(t, err)
		require.Equal(t, int16(0), commitOne(ctx, t, b, j.Generation, j.MemberID, 3))
		letGo()
	} else {
		letGo()
		j = <-joined
		require.Equal(t, int16(0), j.ErrorCode)
		sg := kmsg.NewPtrSyncGroupRequest()
		sg.Group, sg.Generation, sg.MemberID = "g", j.Generation, j.MemberID
		_, err := b.Request(ctx, sg)
		require.NoError(t, err)
		offs, err := e.GroupOffsets(ctx, "g")
		require.NoError(t, err)
		require.Equal(t, int64(1), offs[equeue.QueueRef{Topic: "t", Queue: 0}], "the member starts from the commit made before it joined")
		require.Equal(t, int16(0), commitOne(ctx, t, b, j.Generation, j.MemberID, 3))
	}
	assert.Equal(t, int16(0), <-adminCommit)
	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(3), offs[equeue.QueueRef{Topic: "t", Queue: 0}], "the member's commit is the last")
}
