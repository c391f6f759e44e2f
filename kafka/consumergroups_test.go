package kafka_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// topicIDOf asks b's Metadata for a topic's ID.
func topicIDOf(ctx context.Context, t *testing.T, b *kgo.Broker, topic string) [16]byte {
	t.Helper()
	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr(topic)
	md.Topics = append(md.Topics, mt)
	resp, err := b.Request(ctx, md)
	require.NoError(t, err)
	return resp.(*kmsg.MetadataResponse).Topics[0].TopicID
}

// cgMember speaks ConsumerGroupHeartbeat v1 for one member of a group
// ("g" unless group is set), with a group.instance.id if instance is set.
type cgMember struct {
	t        *testing.T
	b        *kgo.Broker
	group    string
	id       string
	instance string
	epoch    int32
	owned    []int32 // partitions of topic t it was told it has
}

func (m *cgMember) beat(ctx context.Context, tid [16]byte, topics []string, report bool) *kmsg.ConsumerGroupHeartbeatResponse {
	m.t.Helper()
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = cmp.Or(m.group, "g"), m.id, m.epoch
	if m.instance != "" {
		req.InstanceID = kmsg.StringPtr(m.instance)
	}
	req.SubscribedTopicNames = topics
	req.RebalanceTimeoutMillis = -1
	if m.epoch == 0 {
		req.RebalanceTimeoutMillis = 60000
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else if report {
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid, Partitions: slices.Clone(m.owned)}}
	}
	resp, err := m.b.Request(ctx, req)
	require.NoError(m.t, err)
	r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
	if r.ErrorCode == 0 {
		m.epoch = r.MemberEpoch
		if r.Assignment != nil {
			m.owned = nil
			for _, at := range r.Assignment.Topics {
				require.Equal(m.t, tid, at.TopicID)
				m.owned = append(m.owned, at.Partitions...)
			}
			slices.Sort(m.owned)
		}
	}
	return r
}

// The listener assigns a KIP-848 group's partitions itself, evenly, and
// moves a partition to a new member only after the member that had it
// reported it released; a stale epoch is fenced, an unknown member
// refused, a member commits only what it holds, and a member that leaves
// or goes silent gives its partitions back.
func TestConsumerGroup_PartitionMovesOnlyAfterRelease(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	addr := serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 50 * time.Millisecond, ConsumerSessionTimeout: 3 * time.Second})
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	require.NotEqual(t, [16]byte{}, tid, "topics have IDs")

	a := &cgMember{t: t, b: b, id: "member-a"}
	r := a.beat(ctx, tid, []string{"t"}, false)
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Equal(t, []int32{0, 1, 2, 3}, a.owned, "a lone member gets every partition")
	assert.Positive(t, r.HeartbeatIntervalMillis)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode)
	epochA := a.epoch

	bm := &cgMember{t: t, b: b, id: "member-b"}
	require.Equal(t, int16(0), bm.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	assert.Empty(t, bm.owned, "nothing for b while a holds everything")

	r = a.beat(ctx, tid, nil, false) // a keepalive: a has not released anything yet
	require.Equal(t, int16(0), r.ErrorCode)
	require.NotNil(t, r.Assignment, "a is told to give two partitions up")
	assert.Len(t, a.owned, 2)
	assert.Equal(t, epochA, a.epoch, "a keeps its epoch until it released them")
	require.Equal(t, int16(0), bm.beat(ctx, tid, nil, true).ErrorCode)
	assert.Empty(t, bm.owned, "still nothing for b: a has not reported the release")

	// a commits what it processed of a partition it is releasing.
	released := []int32{0, 1, 2, 3}
	released = slices.DeleteFunc(released, func(p int32) bool { return slices.Contains(a.owned, p) })
	commit := func(m *cgMember, part int32) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = "g", m.epoch, m.id
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = "t"
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: part, Offset: 0, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		resp, err := m.b.Request(ctx, namedCommit{oc})
		require.NoError(t, err)
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, int16(0), commit(a, released[0]), "a may commit a partition it is releasing")

	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode) // reports it owns only its two
	assert.Greater(t, a.epoch, epochA, "released: a reaches the group's epoch")
	require.Equal(t, int16(0), bm.beat(ctx, tid, nil, true).ErrorCode)
	assert.Equal(t, released, bm.owned, "b gets what a released")
	assert.Equal(t, int16(0), commit(bm, released[0]))
	assert.Equal(t, int16(113), commit(bm, a.owned[0]), "STALE_MEMBER_EPOCH: not b's partition")
	assert.Equal(t, int16(113), commit(a, released[0]), "nor a's any more")
	ahead := &cgMember{t: t, b: b, id: a.id, epoch: a.epoch + 5}
	assert.Equal(t, int16(110), commit(ahead, a.owned[0]), "FENCED_MEMBER_EPOCH: an epoch the group never gave the member")

	stale := &cgMember{t: t, b: b, id: a.id, epoch: epochA}
	assert.Equal(t, int16(110), stale.beat(ctx, tid, nil, false).ErrorCode, "FENCED_MEMBER_EPOCH")
	// A full heartbeat of the previous epoch (the member missed the answer
	// that moved it on) is accepted while it owns only what it has...
	stale.owned = slices.Clone(a.owned)
	r = stale.beat(ctx, tid, nil, true)
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Equal(t, a.epoch, r.MemberEpoch, "and answered with the current epoch")
	require.NotNil(t, r.Assignment, "and its assignment")
	// ...and fenced when it claims a partition it does not have.
	stale = &cgMember{t: t, b: b, id: a.id, epoch: epochA, owned: []int32{0, 1, 2, 3}}
	assert.Equal(t, int16(110), stale.beat(ctx, tid, nil, true).ErrorCode)
	ghost := &cgMember{t: t, b: b, id: "ghost", epoch: 3}
	assert.Equal(t, int16(25), ghost.beat(ctx, tid, nil, false).ErrorCode, "UNKNOWN_MEMBER_ID")

	// a leaves: b gets everything.
	leave := &cgMember{t: t, b: b, id: a.id, epoch: -1}
	r = leave.beat(ctx, tid, nil, false)
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Equal(t, int32(-1), r.MemberEpoch)
	require.Equal(t, int16(0), bm.beat(ctx, tid, nil, true).ErrorCode)
	assert.Equal(t, []int32{0, 1, 2, 3}, bm.owned)

	// A classic member cannot join a group of the other protocol.
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "g", 10000, 10000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	jr, err := b.Request(ctx, jg)
	require.NoError(t, err)
	assert.Equal(t, int16(23), jr.(*kmsg.JoinGroupResponse).ErrorCode, "INCONSISTENT_GROUP_PROTOCOL")

	describe := func() kmsg.DescribeGroupsResponseGroup {
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"g"}
		resp, err := b.Request(ctx, dg)
		require.NoError(t, err)
		return resp.(*kmsg.DescribeGroupsResponse).Groups[0]
	}
	d := describe()
	assert.Equal(t, "Stable", d.State)
	require.Len(t, d.Members, 1)
	assert.Equal(t, bm.id, d.Members[0].MemberID)

	// b goes silent: after its session it is dropped (the group then
	// shows as an empty one with committed offsets).
	require.Eventually(t, func() bool { return len(describe().Members) == 0 }, 20*time.Second, 50*time.Millisecond)
	assert.Equal(t, "Empty", describe().State)
	assert.Equal(t, int16(25), bm.beat(ctx, tid, nil, false).ErrorCode)
}

// franz-go's KIP-848 consumer (ServerSideBalancer) against the listener:
// two members share the partitions and never hold one at the same time;
// when one leaves, the other takes everything, and every record is read.
func TestConsumerGroup_FranzGoServerSideBalancer(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	addr := serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 100 * time.Millisecond, ConsumerSessionTimeout: 5 * time.Second})
	prod := kclient(t, addr, kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.RoundRobinPartitioner()))
	produce := func(prefix string, n int) []string {
		var out []string
		for i := range n {
			v := fmt.Sprintf("%s%d", prefix, i)
			out = append(out, v)
			require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr())
		}
		return out
	}

	var mu sync.Mutex
	holder := map[int32]string{} // partition -> member holding it
	var overlap []string
	track := func(name string) []kgo.Opt {
		assigned := func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range m["t"] {
				if h, ok := holder[p]; ok && h != name {
					overlap = append(overlap, fmt.Sprintf("%d to %s while %s holds it", p, name, h))
				}
				holder[p] = name
			}
		}
		gone := func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			mu.Lock()
			defer mu.Unlock()
			for _, p := range m["t"] {
				if holder[p] == name {
					delete(holder, p)
				}
			}
		}
		return []kgo.Opt{kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.ServerSideBalancer(),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(100 * time.Millisecond),
			kgo.OnPartitionsAssigned(assigned), kgo.OnPartitionsRevoked(gone), kgo.OnPartitionsLost(gone)}
	}
	seen := map[string]int{}
	var seenMu sync.Mutex
	consume := func(c *kgo.Client, stop <-chan struct{}, done *sync.WaitGroup) {
		defer done.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			fs := c.PollFetches(pctx)
			cancel()
			seenMu.Lock()
			for _, r := range fs.Records() {
				seen[string(r.Value)]++
			}
			seenMu.Unlock()
		}
	}
	waitSeen := func(want []string) {
		require.Eventually(t, func() bool {
			seenMu.Lock()
			defer seenMu.Unlock()
			for _, v := range want {
				if seen[v] == 0 {
					return false
				}
			}
			return true
		}, 30*time.Second, 20*time.Millisecond)
	}

	c1, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, track("c1")...)...)
	require.NoError(t, err)
	c2, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, track("c2")...)...)
	require.NoError(t, err)
	defer c2.Close()
	stop1, stop2 := make(chan struct{}), make(chan struct{})
	var wg1, wg2 sync.WaitGroup
	wg1.Add(1)
	wg2.Add(1)
	go consume(c1, stop1, &wg1)
	go consume(c2, stop2, &wg2)

	first := produce("a", 40)
	waitSeen(first)
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		n := map[string]int{}
		for _, h := range holder {
			n[h]++
		}
		return len(holder) == 4 && n["c1"] == 2 && n["c2"] == 2
	}, 30*time.Second, 20*time.Millisecond, "the four partitions end up two and two")
	// The listener assigned them (KIP-848), not a client-side leader: the
	// members it describes carry no classic protocol metadata.
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"g"}
	dresp, err := dg.RequestWith(ctx, prod)
	require.NoError(t, err)
	require.Len(t, dresp.Groups[0].Members, 2)
	for _, m := range dresp.Groups[0].Members {
		assert.Empty(t, m.ProtocolMetadata, "a classic member would carry its subscription here")
	}
	// kadm sees the group through ConsumerGroupDescribe and ListGroups v5.
	adm := kadm.NewClient(prod)
	require.Eventually(t, func() bool {
		described, err := adm.DescribeConsumerGroups(ctx, "g")
		if err != nil || described["g"].Err != nil || len(described["g"].Members) != 2 {
			return false
		}
		covered := map[int32]int{}
		for _, m := range described["g"].Members {
			if len(m.Assignment["t"]) != 2 || !assert.ObjectsAreEqual(m.Assignment["t"], m.TargetAssignment["t"]) {
				return false
			}
			for p := range m.Assignment["t"] {
				covered[p]++
			}
		}
		return len(covered) == 4 && described["g"].State == "Stable"
	}, 30*time.Second, 20*time.Millisecond, "two members, two partitions each, as targeted")
	listed, err := adm.ListGroupsByType(ctx, []string{"consumer"})
	require.NoError(t, err)
	assert.Equal(t, []string{"g"}, listed.Groups())
	listed, err = adm.ListGroupsByType(ctx, []string{"classic"})
	require.NoError(t, err)
	assert.Empty(t, listed.Groups())
	described, err := adm.DescribeConsumerGroups(ctx, "nope")
	require.NoError(t, err)
	assert.ErrorIs(t, described["nope"].Err, kerr.GroupIDNotFound)

	close(stop1)
	wg1.Wait()
	c1.Close() // leaves the group
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(holder) == 4 && holder[0] == "c2" && holder[1] == "c2" && holder[2] == "c2" && holder[3] == "c2"
	}, 30*time.Second, 20*time.Millisecond, "c2 takes every partition")
	second := produce("b", 40)
	waitSeen(second)
	close(stop2)
	wg2.Wait()

	mu.Lock()
	assert.Empty(t, overlap, "no partition held by two members at once")
	mu.Unlock()
	var keys []string
	for k := range seen {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Len(t, keys, 80)
}

// A member subscribed by pattern gets the partitions of the topics that
// match it; a member that does not report a taken partition released
// within its rebalance timeout is dropped, and the partition moves on.
func TestConsumerGroup_PatternAndReleaseTimeout(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "orders", 2))
	require.NoError(t, e.CreateTopic(ctx, "other", 2))
	addr := serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 50 * time.Millisecond, ConsumerSessionTimeout: 30 * time.Second})
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "orders")

	join := func(id string, rebalance time.Duration) *cgMember {
		m := &cgMember{t: t, b: b, id: id}
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", id, int32(rebalance.Milliseconds())
		req.SubscribedTopicRegex = kmsg.StringPtr("ord.*")
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		require.Equal(t, int16(0), r.ErrorCode)
		m.epoch = r.MemberEpoch
		require.NotNil(t, r.Assignment)
		for _, at := range r.Assignment.Topics {
			require.Equal(t, tid, at.TopicID, "only the matching topic")
			m.owned = append(m.owned, at.Partitions...)
		}
		return m
	}
	a := join("a", 300*time.Millisecond)
	assert.Equal(t, []int32{0, 1}, a.owned)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode)
	bm := join("b", time.Minute)
	assert.Empty(t, bm.owned)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, false).ErrorCode) // told to give one up; never reports it
	assert.Len(t, a.owned, 1)
	require.Eventually(t, func() bool {
		require.Equal(t, int16(0), bm.beat(ctx, tid, nil, true).ErrorCode)
		return len(bm.owned) == 2
	}, 20*time.Second, 50*time.Millisecond, "a is dropped after its rebalance timeout; b gets both")
	assert.Equal(t, int16(25), a.beat(ctx, tid, nil, false).ErrorCode)
}

func TestConsumerGroup_HeartbeatIntervalBelowTheSession(t *testing.T) {
	e := openEngine(t, nil)
	_, err := kafka.NewServer(e, &kafka.Options{ConsumerHeartbeatInterval: 5 * time.Second, ConsumerSessionTimeout: time.Second})
	require.ErrorIs(t, err, equeue.ErrInvalidOptions)
}

// A model run: members that join, heartbeat (keepalives and full
// reports), leave and rejoin at random, while the topic grows, never hold
// one partition at once; once they settle, every partition has exactly one
// member and the shares differ by at most one.
func TestConsumerGroup_ModelNoPartitionTwice(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 5))
	addr := serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 50 * time.Millisecond, ConsumerSessionTimeout: time.Minute})
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	members := make([]*cgMember, 4)
	for i := range members {
		members[i] = &cgMember{t: t, b: b, id: fmt.Sprintf("m%d", i)}
	}
	// A member gives a partition taken from it up only when it next
	// reports what it owns (it finishes its work on it first); until then
	// it still holds it.
	revoking := make([]map[int32]bool, len(members))
	check := func(step int) {
		holder := map[int32]string{}
		for i, m := range members {
			held := slices.Clone(m.owned)
			for p := range revoking[i] {
				held = append(held, p)
			}
			for _, p := range held {
				if h, ok := holder[p]; ok {
					t.Fatalf("step %d (seed %d): partition %d held by %s and %s", step, seed, p, h, m.id)
				}
				holder[p] = m.id
			}
		}
	}
	joined := make([]bool, len(members))
	act := func(i int, kind int) {
		m := members[i]
		if !joined[i] {
			m.epoch, m.owned = 0, nil
			r := m.beat(ctx, tid, []string{"t"}, false)
			require.Equal(t, int16(0), r.ErrorCode)
			joined[i] = true
			return
		}
		switch kind {
		case 0: // leave
			leave := &cgMember{t: t, b: b, id: m.id, epoch: -1}
			require.Equal(t, int16(0), leave.beat(ctx, tid, nil, false).ErrorCode)
			m.owned, joined[i], revoking[i] = nil, false, nil
		default:
			if kind == 1 {
				revoking[i] = nil // released before it reports
			}
			before := slices.Clone(m.owned)
			r := m.beat(ctx, tid, nil, kind == 1)
			switch r.ErrorCode {
			case 0:
				for _, p := range before {
					if !slices.Contains(m.owned, p) {
						if revoking[i] == nil {
							revoking[i] = map[int32]bool{}
						}
						revoking[i][p] = true
					}
				}
			case 25, 110: // dropped or fenced: it has lost its partitions and joins again
				m.owned, joined[i], revoking[i] = nil, false, nil
			default:
				t.Fatalf("heartbeat of %s: code %d", m.id, r.ErrorCode)
			}
		}
	}
	for step := range 600 {
		if step%150 == 149 {
			require.NoError(t, e.AddQueues(ctx, "t", 1))
		}
		i := rng.IntN(len(members))
		kind := 1 + rng.IntN(2) // a keepalive or a full report
		if rng.IntN(20) == 0 {
			kind = 0
		}
		act(i, kind)
		check(step)
	}
	// Settle: everyone joined, several full rounds.
	for range 6 {
		for i := range members {
			act(i, 1)
			check(-1)
		}
	}
	ti, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	total := len(ti.Queues)
	got := 0
	lo, hi := total, 0
	for _, m := range members {
		got += len(m.owned)
		lo, hi = min(lo, len(m.owned)), max(hi, len(m.owned))
	}
	assert.Equal(t, total, got, "every partition has a member (seed %d)", seed)
	assert.LessOrEqual(t, hi-lo, 1, "shares differ by at most one (seed %d)", seed)
}

// Bad input to ConsumerGroupHeartbeat gets the protocol's errors.
func TestConsumerGroup_BadHeartbeats(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	b := kclient(t, serve(t, e, nil)).SeedBrokers()[0]
	send := func(mod func(*kmsg.ConsumerGroupHeartbeatRequest)) int16 {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = "g", "m", 10000
		req.SubscribedTopicNames = []string{"t"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		mod(req)
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		return resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode
	}
	assert.Equal(t, int16(24), send(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "no spaces" }), "INVALID_GROUP_ID")
	assert.Equal(t, int16(42), send(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }), "INVALID_REQUEST: v1 members name themselves")
	assert.Equal(t, int16(42), send(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }))
	assert.Equal(t, int16(42), send(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }), "a join names a subscription")
	assert.Equal(t, int16(42), send(func(r *kmsg.ConsumerGroupHeartbeatRequest) {
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{Partitions: []int32{0}}}
	}), "a join owns nothing")
	assert.Equal(t, int16(112), send(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky-ish") }), "UNSUPPORTED_ASSIGNOR")
	assert.Equal(t, int16(128), send(func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("(") }), "INVALID_REGULAR_EXPRESSION")
	assert.Equal(t, int16(0), send(func(*kmsg.ConsumerGroupHeartbeatRequest) {}), "a subscription to a topic not there yet is fine")
}

// A member that changes its subscription away from a topic still holds
// that topic's partitions until it reports them released: a full
// heartbeat that still names them keeps them its, and a member that then
// subscribes to the topic does not get them meanwhile.
func TestConsumerGroup_UnsubscribedTopicStaysHeldUntilReleased(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	require.NoError(t, e.CreateTopic(ctx, "u", 1))
	addr := serve(t, e, &kafka.Options{ConsumerHeartbeatInterval: 50 * time.Millisecond, ConsumerSessionTimeout: time.Minute})
	b := kclient(t, addr).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")

	a := &cgMember{t: t, b: b, id: "a"}
	require.Equal(t, int16(0), a.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, []int32{0, 1}, a.owned)
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode)

	// a now subscribes to u only, still owning t's partitions (it finishes
	// its work on them first), and says so in two full heartbeats.
	beat := func(topics []string) *kmsg.ConsumerGroupHeartbeatResponse {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", a.id, a.epoch, -1
		req.SubscribedTopicNames = topics
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: tid, Partitions: []int32{0, 1}}}
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		r := resp.(*kmsg.ConsumerGroupHeartbeatResponse)
		require.Equal(t, int16(0), r.ErrorCode)
		a.epoch = r.MemberEpoch
		return r
	}
	beat([]string{"u"})
	beat(nil)

	bm := &cgMember{t: t, b: b, id: "b"}
	require.Equal(t, int16(0), bm.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	require.Equal(t, int16(0), bm.beat(ctx, tid, nil, true).ErrorCode)
	assert.Empty(t, bm.owned, "a still holds t's partitions: nothing for b yet")
}

// gatedTopics is a broker whose next Topic call for one name, once armed,
// waits until the test lets it go: it holds a ConsumerGroupHeartbeat
// between the listener's reading of the group's topics and its use of them.
type gatedTopics struct {
	kafka.Broker
	mu      sync.Mutex
	name    string
	entered chan struct{}
	release chan struct{}
}

func (g *gatedTopics) arm(name string) (entered, release chan struct{}) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.name, g.entered, g.release = name, make(chan struct{}), make(chan struct{})
	return g.entered, g.release
}

func (g *gatedTopics) Topic(ctx context.Context, name string) (equeue.TopicInfo, error) {
	g.mu.Lock()
	entered, release := g.entered, g.release
	if entered != nil && name == g.name {
		g.entered, g.release = nil, nil
	} else {
		entered, release = nil, nil
	}
	g.mu.Unlock()
	if entered != nil {
		close(entered)
		select {
		case <-release:
		case <-ctx.Done():
		}
	}
	return g.Broker.Topic(ctx, name)
}

// A heartbeat that read the group's topics before another member joined,
// and is applied after that member's join, must not retarget the group
// with its older topic list: the newcomer's topic would drop out of the
// group's target assignment, as if nobody subscribed to it.
func TestConsumerGroup_RacingHeartbeatsKeepTheNewerTopics(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "a", 2))
	require.NoError(t, e.CreateTopic(ctx, "b", 2))
	gb := &gatedTopics{Broker: e}
	addr := serve(t, gb, &kafka.Options{ConsumerSessionTimeout: time.Minute})
	ba := kclient(t, addr).SeedBrokers()[0] // two clients: two connections
	bb := kclient(t, addr).SeedBrokers()[0]
	tidA, tidB := topicIDOf(ctx, t, ba, "a"), topicIDOf(ctx, t, bb, "b")

	a := &cgMember{t: t, b: ba, id: "member-a"}
	require.Equal(t, int16(0), a.beat(ctx, tidA, []string{"a"}, false).ErrorCode)
	require.Equal(t, []int32{0, 1}, a.owned)

	// a's keepalive reads the group's topics (a only) and is held there.
	entered, release := gb.arm("a")
	type answer struct {
		r   kmsg.Response
		err error
	}
	done := make(chan answer, 1)
	go func() {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = "g", a.id, a.epoch, -1
		r, err := ba.Request(ctx, req)
		done <- answer{r, err}
	}()
	select {
	case <-entered:
	case <-ctx.Done():
		t.Fatal("a's heartbeat never read its topics")
	}

	// b joins for topic b meanwhile and is given its partitions.
	bm := &cgMember{t: t, b: bb, id: "member-b"}
	require.Equal(t, int16(0), bm.beat(ctx, tidB, []string{"b"}, false).ErrorCode)
	require.Equal(t, []int32{0, 1}, bm.owned)

	close(release)
	ans := <-done
	require.NoError(t, ans.err)
	require.Equal(t, int16(0), ans.r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)

	dg := kmsg.NewPtrConsumerGroupDescribeRequest()
	dg.Groups = []string{"g"}
	dresp, err := dg.RequestWith(ctx, kclient(t, addr))
	require.NoError(t, err)
	require.Len(t, dresp.Groups, 1)
	targets := map[string][]kmsg.AssignmentTopicPartition{}
	for _, m := range dresp.Groups[0].Members {
		targets[m.MemberID] = m.TargetAssignment.TopicPartitions
	}
	require.Len(t, targets["member-b"], 1, "b's target keeps topic b")
	assert.Equal(t, "b", targets["member-b"][0].Topic)
	assert.Equal(t, []int32{0, 1}, targets["member-b"][0].Partitions)
	require.Len(t, targets["member-a"], 1)
	assert.Equal(t, "a", targets["member-a"][0].Topic)
}

// TestConsumerGroup_LeaveOfAnUnknownMemberIsUnknownMemberID: a leaving
// heartbeat (member epoch -1) of a member the group does not have is
// answered UNKNOWN_MEMBER_ID, as Kafka answers it; a member's own leave
// is answered with epoch -1, and a second one with the error.
func TestConsumerGroup_LeaveOfAnUnknownMemberIsUnknownMemberID(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := kclient(t, serve(t, e, &kafka.Options{ConsumerSessionTimeout: time.Minute})).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	leave := func(group, id string) *kmsg.ConsumerGroupHeartbeatResponse {
		return (&cgMember{t: t, b: b, group: group, id: id, epoch: -1}).beat(ctx, tid, nil, false)
	}

	a := &cgMember{t: t, b: b, id: "member-a"}
	require.Equal(t, int16(0), a.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	assert.Equal(t, int16(25), leave("g", "ghost").ErrorCode, "a group without that member")
	require.Equal(t, int16(0), a.beat(ctx, tid, nil, true).ErrorCode, "a is still in the group")

	// c keeps the group alive once a left.
	c := &cgMember{t: t, b: b, id: "member-c"}
	require.Equal(t, int16(0), c.beat(ctx, tid, []string{"t"}, false).ErrorCode)
	r := leave("g", a.id)
	require.Equal(t, int16(0), r.ErrorCode)
	assert.Equal(t, int32(-1), r.MemberEpoch)
	assert.Equal(t, int16(25), leave("g", a.id).ErrorCode, "left already")
}

// TestConsumerGroup_LeaveOfAnUnknownGroupIsGroupIDNotFound: a leaving
// heartbeat to a group that has no KIP-848 group of its name (none ever
// joined, or a classic group has that name) is answered GROUP_ID_NOT_FOUND,
// as Kafka's coordinator answers it (it looks the consumer group up before
// the member); before, it was answered UNKNOWN_MEMBER_ID.
func TestConsumerGroup_LeaveOfAnUnknownGroupIsGroupIDNotFound(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	b := kclient(t, serve(t, e, &kafka.Options{ConsumerSessionTimeout: time.Minute})).SeedBrokers()[0]
	tid := topicIDOf(ctx, t, b, "t")
	for _, epoch := range []int32{-1, -2} {
		r := (&cgMember{t: t, b: b, group: "none", id: "ghost", instance: "i", epoch: epoch}).beat(ctx, tid, nil, false)
		assert.Equal(t, int16(69), r.ErrorCode, "no such group, member epoch %d", epoch)
	}

	joinAlone(ctx, t, b, "classic")
	r := (&cgMember{t: t, b: b, group: "classic", id: "ghost", epoch: -1}).beat(ctx, tid, nil, false)
	assert.Equal(t, int16(69), r.ErrorCode, "a classic group of that name")
}
