package kafka_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"hash/crc32"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// fakeNode is an engine posing as one node of a cluster whose leader the
// test chooses.
type fakeNode struct {
	*equeue.Engine
	id string

	mu         sync.Mutex
	leaderID   string
	leaderAddr string
	term       uint64 // grows with every change of leader, as Raft's
}

var _ kafka.ClusterNode = (*fakeNode)(nil)

func (f *fakeNode) ID() string { return f.id }

func (f *fakeNode) KafkaLeader() (id, addr string, self bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leaderID, f.leaderAddr, f.leaderID != "" && f.leaderID == f.id
}

func (f *fakeNode) Term() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.term
}

func (f *fakeNode) setLeader(id, addr string) {
	f.mu.Lock()
	if id != f.leaderID {
		f.term++
	}
	f.leaderID, f.leaderAddr = id, addr
	f.mu.Unlock()
}

// A follower's listener names the leader's listener as the one broker,
// controller and group coordinator, and refuses every call that reads or
// changes the engine with the error on which Kafka clients look the leader
// up again; nothing reaches its engine. With no leader known it names
// itself and no controller; once it leads it serves.
func TestCluster_FollowerPointsClientsToTheLeader(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	node := &fakeNode{Engine: e, id: "n2"}
	node.setLeader("n1", "10.0.0.1:19092")
	logs := &lockedBuffer{}
	addr := serve(t, node, &kafka.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	seed := kclient(t, addr).SeedBrokers()[0]
	leaderID := kafka.BrokerID("n1")
	require.NotEqual(t, kafka.BrokerID("n2"), leaderID)

	md := kmsg.NewPtrMetadataRequest()
	mt := kmsg.NewMetadataRequestTopic()
	mt.Topic = kmsg.StringPtr("t")
	md.Topics = append(md.Topics, mt)
	mresp, err := seed.Request(ctx, md)
	require.NoError(t, err)
	m := mresp.(*kmsg.MetadataResponse)
	assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: leaderID, Host: "10.0.0.1", Port: 19092}}, m.Brokers)
	assert.Equal(t, leaderID, m.ControllerID)
	require.Len(t, m.Topics, 1)
	assert.Equal(t, int16(5), m.Topics[0].ErrorCode, "LEADER_NOT_AVAILABLE")
	assert.Empty(t, m.Topics[0].Partitions)

	allReq := kmsg.NewPtrMetadataRequest()
	mresp, err = seed.Request(ctx, allReq)
	require.NoError(t, err)
	assert.Empty(t, mresp.(*kmsg.MetadataResponse).Topics, "a follower lists no topics")

	fc := kmsg.NewPtrFindCoordinatorRequest() // franz-go sends v4: keys in a list
	fc.CoordinatorKeys = []string{"g"}
	fresp, err := seed.Request(ctx, fc)
	require.NoError(t, err)
	require.Len(t, fresp.(*kmsg.FindCoordinatorResponse).Coordinators, 1)
	f := fresp.(*kmsg.FindCoordinatorResponse).Coordinators[0]
	assert.Equal(t, int16(0), f.ErrorCode)
	assert.Equal(t, leaderID, f.NodeID)
	assert.Equal(t, "10.0.0.1", f.Host)
	assert.Equal(t, int32(19092), f.Port)

	// Calls that read or change the engine.
	assert.Equal(t, int16(6), produceOn(ctx, t, seed, "t", recordBatch(t, "refused")), "NOT_LEADER_OR_FOLLOWER")

	fr := kmsg.NewPtrFetchRequest()
	fr.MaxWaitMillis, fr.MaxBytes = 10, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	ft.Partitions = []kmsg.FetchRequestTopicPartition{{Partition: 0, PartitionMaxBytes: 1 << 20, CurrentLeaderEpoch: -1, LogStartOffset: -1}}
	fr.Topics = append(fr.Topics, ft)
	frr, err := seed.Request(ctx, fr)
	require.NoError(t, err)
	assert.Equal(t, int16(6), frr.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode)

	lo := kmsg.NewPtrListOffsetsRequest()
	lt := kmsg.NewListOffsetsRequestTopic()
	lt.Topic = "t"
	lt.Partitions = []kmsg.ListOffsetsRequestTopicPartition{{Partition: 1, Timestamp: -1, CurrentLeaderEpoch: -1}}
	lo.Topics = append(lo.Topics, lt)
	lor, err := seed.Request(ctx, lo)
	require.NoError(t, err)
	assert.Equal(t, int16(6), lor.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode)

	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "g", 10000, 10000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	jr, err := seed.Request(ctx, jg)
	require.NoError(t, err)
	assert.Equal(t, int16(16), jr.(*kmsg.JoinGroupResponse).ErrorCode, "NOT_COORDINATOR")

	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation, oc.MemberID = "g", -1, ""
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "t"
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, oct)
	ocr, err := seed.Request(ctx, namedCommit{oc})
	require.NoError(t, err)
	assert.Equal(t, int16(16), ocr.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)

	lg := kmsg.NewPtrListGroupsRequest()
	lgr, err := seed.Request(ctx, lg)
	require.NoError(t, err)
	assert.Equal(t, int16(16), lgr.(*kmsg.ListGroupsResponse).ErrorCode)

	ct := kmsg.NewPtrCreateTopicsRequest()
	ctt := kmsg.NewCreateTopicsRequestTopic()
	ctt.Topic, ctt.NumPartitions, ctt.ReplicationFactor = "new", 1, 1
	ct.Topics = append(ct.Topics, ctt)
	ctr, err := seed.Request(ctx, ct)
	require.NoError(t, err)
	assert.Equal(t, int16(41), ctr.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode, "NOT_CONTROLLER")

	ip := kmsg.NewPtrInitProducerIDRequest()
	ipr, err := seed.Request(ctx, ip)
	require.NoError(t, err)
	assert.Equal(t, int16(41), ipr.(*kmsg.InitProducerIDResponse).ErrorCode, "only the leader hands out producer IDs")
	assert.Equal(t, int64(-1), ipr.(*kmsg.InitProducerIDResponse).ProducerID)

	// Nothing reached the engine.
	ti, err := e.Topic(ctx, "t")
	require.NoError(t, err)
	for _, q := range ti.Queues {
		assert.Zero(t, q.MaxOffset, "queue %d", q.ID)
	}
	_, err = e.Topic(ctx, "new")
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)
	groups, err := e.Groups(ctx)
	require.NoError(t, err)
	assert.Empty(t, groups)

	// No leader known: the listener names itself, and no controller or
	// coordinator.
	node.setLeader("", "")
	mresp, err = seed.Request(ctx, md)
	require.NoError(t, err)
	m = mresp.(*kmsg.MetadataResponse)
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	p, _ := strconv.Atoi(port)
	assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: kafka.BrokerID("n2"), Host: host, Port: int32(p)}}, m.Brokers)
	assert.Equal(t, int32(-1), m.ControllerID)
	assert.Equal(t, int16(5), m.Topics[0].ErrorCode)
	fresp, err = seed.Request(ctx, fc)
	require.NoError(t, err)
	require.Len(t, fresp.(*kmsg.FindCoordinatorResponse).Coordinators, 1)
	assert.Equal(t, int16(15), fresp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode, "COORDINATOR_NOT_AVAILABLE")

	// A leader without a Kafka address: the same, and a warning, once.
	node.setLeader("n3", "")
	for range 2 {
		mresp, err = seed.Request(ctx, md)
		require.NoError(t, err)
		m = mresp.(*kmsg.MetadataResponse)
		assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: kafka.BrokerID("n2"), Host: host, Port: int32(p)}}, m.Brokers)
		assert.Equal(t, int32(-1), m.ControllerID)
	}
	assert.Equal(t, 1, strings.Count(logs.String(), "leader has no Kafka address"), "logs: %s", logs)
	assert.Contains(t, logs.String(), "leader=n3")

	// This node leads: it serves, under its own broker ID.
	node.setLeader("n2", addr)
	mresp, err = seed.Request(ctx, md)
	require.NoError(t, err)
	m = mresp.(*kmsg.MetadataResponse)
	self := kafka.BrokerID("n2")
	assert.Equal(t, []kmsg.MetadataResponseBroker{{NodeID: self, Host: host, Port: int32(p)}}, m.Brokers)
	require.Len(t, m.Topics, 1)
	require.Len(t, m.Topics[0].Partitions, 2)
	for _, part := range m.Topics[0].Partitions {
		assert.Equal(t, self, part.Leader)
	}
	cl := kclient(t, addr, kgo.DefaultProduceTopic("t"))
	require.NoError(t, cl.ProduceSync(ctx, &kgo.Record{Value: []byte("served")}).FirstErr())
}

// recordBatch encodes one record as a v2 record batch, with its length
// and checksum.
func recordBatch(t *testing.T, value string) []byte {
	t.Helper()
	rec := kmsg.NewRecord()
	rec.Value = []byte(value)
	rb := kmsg.NewRecordBatch()
	rb.Magic, rb.NumRecords, rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 2, 1, -1, -1, -1
	rec.Length = int32(len(rec.AppendTo(nil)) - 1) // all but the varint of Length 0
	rb.Records = rec.AppendTo(nil)
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// A listener hands out producer IDs from the clock, not from when it
// started: one started before another (a cluster node that becomes the
// leader after the one that led) gives IDs above those the other gave,
// so no two producers get the same ID.
func TestProducerIDs_AboveThoseOfAListenerBefore(t *testing.T) {
	ctx := testCtx(t)
	e := openEngine(t, nil)
	started := kclient(t, serve(t, e, nil)).SeedBrokers()[0] // started first, hands out IDs last
	time.Sleep(20 * time.Millisecond)
	later := kclient(t, serve(t, e, nil)).SeedBrokers()[0]
	initPID := func(b *kgo.Broker) int64 {
		resp, err := b.Request(ctx, kmsg.NewPtrInitProducerIDRequest())
		require.NoError(t, err)
		r := resp.(*kmsg.InitProducerIDResponse)
		require.Equal(t, int16(0), r.ErrorCode)
		return r.ProducerID
	}
	var given []int64
	for range 3 {
		given = append(given, initPID(later))
	}
	time.Sleep(time.Millisecond)
	next := initPID(started)
	for _, g := range given {
		assert.Greater(t, next, g)
	}
	assert.Greater(t, initPID(started), next)
}

// lockedBuffer is a bytes.Buffer safe for a logger on another goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A listener whose node stops leading forgets its groups: should the node
// lead again, their members (who rejoined at the next leader meanwhile)
// are unknown to it and join afresh, instead of stalling its rebalances
// until their sessions run out.
func TestCluster_ListenerForgetsItsGroupsWhenItStopsLeading(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	node := &fakeNode{Engine: e, id: "n2"}
	node.setLeader("n2", "")
	logs := &lockedBuffer{}
	addr := serve(t, node, &kafka.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	seed := kclient(t, addr).SeedBrokers()[0]

	j := joinAlone(ctx, t, seed, "g")
	heartbeat := func() int16 {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = "g", j.Generation, j.MemberID
		resp, err := seed.Request(ctx, hb)
		require.NoError(t, err)
		return resp.(*kmsg.HeartbeatResponse).ErrorCode
	}
	require.Equal(t, int16(0), heartbeat())
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	clash := &cgMember{t: t, b: seed, id: "next-gen"}
	assert.Equal(t, int16(69), clash.beat(ctx, [16]byte{}, []string{"cg"}, false).ErrorCode, "GROUP_ID_NOT_FOUND: g is a classic group with members")
	member := &cgMember{t: t, b: seed, group: "g2", id: "next-gen"}
	require.Equal(t, int16(0), member.beat(ctx, [16]byte{}, []string{"cg"}, false).ErrorCode, "a KIP-848 group too")

	node.setLeader("n1", "10.0.0.1:19092")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "are forgotten") }, 20*time.Second, 10*time.Millisecond)
	assert.Equal(t, int16(16), heartbeat(), "NOT_COORDINATOR while following")
	node.setLeader("n2", "")
	assert.Equal(t, int16(25), heartbeat(), "UNKNOWN_MEMBER_ID: the member must join again")
	assert.Equal(t, int16(25), member.beat(ctx, [16]byte{}, nil, false).ErrorCode)
}

// A node that leads again after another led forgets what its listener
// knew of idempotent producers: their sequence numbers moved on at the
// other leader. A retry of a batch the other leader stored (its answer
// lost) is then caught by the topic's dedup window and acknowledged at the
// first copy's offset. Checked against the stale sequence numbers it was
// refused as out of order, and Kafka clients then store it again under a
// new epoch, with IDs no window has seen (found by TestCluster_JepsenKafka).
func TestCluster_ListenerForgetsProducersOfAnEarlierTerm(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "once", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	n1, n2 := &fakeNode{Engine: e, id: "n1"}, &fakeNode{Engine: e, id: "n2"}
	lead := func(id string) {
		n1.setLeader(id, "")
		n2.setLeader(id, "")
	}
	lead("n1")
	c1, c2 := kclient(t, serve(t, n1, nil)), kclient(t, serve(t, n2, nil))
	const pid = 4242
	produce := func(cl *kgo.Client, seq int32, value string) kmsg.ProduceResponseTopicPartition {
		return produceRaw(ctx, t, cl, "once", 0, rawBatch(pid, 0, seq, value))
	}

	require.Equal(t, int16(0), produce(c1, 0, "a0").ErrorCode)
	lead("n2")
	require.Equal(t, int16(0), produce(c2, 1, "a1").ErrorCode)
	require.Equal(t, int64(2), produce(c2, 2, "a2").BaseOffset) // its answer is lost
	lead("n1")

	retry := produce(c1, 2, "a2")
	require.Equal(t, int16(0), retry.ErrorCode, "not OUT_OF_ORDER_SEQUENCE_NUMBER (45)")
	assert.Equal(t, int64(2), retry.BaseOffset, "acknowledged at the first copy's offset")
	next := produce(c1, 3, "a3")
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, int64(3), next.BaseOffset)
	assert.Equal(t, int16(45), produce(c1, 9, "gap").ErrorCode, "the sequence is checked again from there")

	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "once", Max: 10})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"a0", "a1", "a2", "a3"}, bodies, "each stored once")
}

// heldNode is a fakeNode whose first Append waits until released.
type heldNode struct {
	*fakeNode
	entered, release chan struct{}
	once             sync.Once
}

func (h *heldNode) Append(ctx context.Context, req *equeue.AppendRequest) (equeue.AppendResult, error) {
	first := false
	h.once.Do(func() { first = true })
	if first {
		close(h.entered)
		<-h.release
	}
	return h.fakeNode.Append(ctx, req)
}

// A producer's batch sent in a new term waits for its batch of the earlier
// term still being stored: the sequence state is forgotten, not replaced,
// so one producer's batches to one partition are still stored one at a
// time, in the order they came.
func TestCluster_ProducerBatchesStayInOrderAcrossTerms(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	node := &heldNode{fakeNode: &fakeNode{Engine: e, id: "n1"}, entered: make(chan struct{}), release: make(chan struct{})}
	var released sync.Once
	release := func() { released.Do(func() { close(node.release) }) }
	node.setLeader("n1", "")
	addr := serve(t, node, nil)
	t.Cleanup(release) // runs before the listener's close: its handler holds the first Append
	first := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() { first <- produceRaw(ctx, t, kclient(t, addr), "t", 0, rawBatch(7, 0, 0, "a")) }()
	<-node.entered
	node.setLeader("n2", "")
	node.setLeader("n1", "") // leads again, in a later term
	second := make(chan kmsg.ProduceResponseTopicPartition, 1)
	go func() { second <- produceRaw(ctx, t, kclient(t, addr), "t", 0, rawBatch(7, 0, 1, "b")) }()
	select {
	case r := <-second:
		t.Fatalf("the later batch was answered (code %d, offset %d) while the earlier one was still being stored", r.ErrorCode, r.BaseOffset)
	case <-time.After(300 * time.Millisecond):
	}
	release()
	a, b := <-first, <-second
	require.Equal(t, int16(0), a.ErrorCode)
	require.Equal(t, int16(0), b.ErrorCode)
	assert.Equal(t, int64(0), a.BaseOffset)
	assert.Equal(t, int64(1), b.BaseOffset)
}

// A node that leads again forgets its groups even if it never saw itself
// follow (its listener looks every 100 ms): a member of the generation it
// knew, who may have rejoined at the leader in between, must join again,
// and its commit is refused rather than taken over the offsets committed
// in between.
func TestCluster_ListenerForgetsGroupsOfAnEarlierTerm(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	require.NoError(t, err) // the offset committed is within the partition
	node := &fakeNode{Engine: e, id: "n2"}
	node.setLeader("n2", "")
	seed := kclient(t, serve(t, node, nil)).SeedBrokers()[0]

	j := joinAlone(ctx, t, seed, "g")
	commit := func(offset int64) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = "g", j.Generation, j.MemberID
		ot := kmsg.NewOffsetCommitRequestTopic()
		ot.Topic = "t"
		op := kmsg.NewOffsetCommitRequestTopicPartition()
		op.Offset = offset
		ot.Partitions = append(ot.Partitions, op)
		oc.Topics = append(oc.Topics, ot)
		resp, err := seed.Request(ctx, namedCommit{oc})
		require.NoError(t, err)
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	require.Equal(t, int16(0), commit(1))
	member := &cgMember{t: t, b: seed, group: "g2", id: "m"}
	require.Equal(t, int16(0), member.beat(ctx, [16]byte{}, []string{"cg"}, false).ErrorCode)

	node.setLeader("n1", "10.0.0.1:19092")
	node.setLeader("n2", "") // at once: no tick of the listener in between
	assert.Equal(t, int16(25), commit(0), "UNKNOWN_MEMBER_ID: the member must join again")
	assert.Equal(t, int16(25), member.beat(ctx, [16]byte{}, nil, false).ErrorCode)
}

// produceOn sends one Produce request with batch for partition 0 of topic
// to broker b itself (not routed to the partition's leader) and returns
// the partition's error code.
func produceOn(ctx context.Context, t *testing.T, b *kgo.Broker, topic string, batch []byte) int16 {
	t.Helper()
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks, pr.TimeoutMillis = -1, 5000
	pt := kmsg.NewProduceRequestTopic()
	pt.Topic = topic
	pp := kmsg.NewProduceRequestTopicPartition()
	pp.Records = batch
	pt.Partitions = append(pt.Partitions, pp)
	pr.Topics = append(pr.Topics, pt)
	resp, err := b.Request(ctx, pr)
	require.NoError(t, err)
	return resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
}

// joinAlone makes one member of classic group "g" through the raw
// protocol (JoinGroup, then SyncGroup as its leader) and returns its join.
func joinAlone(ctx context.Context, t *testing.T, seed *kgo.Broker, group string) *kmsg.JoinGroupResponse {
	t.Helper()
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = group, 30000, 30000, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	j := requestJoin(ctx, t, seed, jg)
	require.Equal(t, int16(0), j.ErrorCode)
	sg := kmsg.NewPtrSyncGroupRequest()
	sg.Group, sg.Generation, sg.MemberID = group, j.Generation, j.MemberID
	sresp, err := seed.Request(ctx, sg)
	require.NoError(t, err)
	require.Equal(t, int16(0), sresp.(*kmsg.SyncGroupResponse).ErrorCode)
	return j
}

// Rights come before leadership: on a follower a token without the right
// is refused for want of it, not sent to the leader; a token with it is
// sent there. So for a KIP-848 heartbeat: a produce-only token may not
// take part in a group, on the leader either.
func TestCluster_FollowerChecksRightsFirst(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	node := &fakeNode{Engine: e, id: "n2"}
	node.setLeader("n1", "10.0.0.1:19092")
	addr := serve(t, node, &kafka.Options{Tokens: map[string]kafka.Rights{"w": kafka.RightProduce, "r": kafka.RightConsume}})
	seedOf := func(token string) *kgo.Broker {
		return kclient(t, addr, kgo.SASL(plain.Auth{User: "u", Pass: token}.AsMechanism()), kgo.RequestRetries(0)).SeedBrokers()[0]
	}
	produce := func(b *kgo.Broker) int16 { return produceOn(ctx, t, b, "t", recordBatch(t, "x")) }
	beat := func(b *kgo.Broker) int16 {
		m := &cgMember{t: t, b: b, id: "m"}
		return m.beat(ctx, [16]byte{}, []string{"not-created"}, false).ErrorCode
	}
	w, r := seedOf("w"), seedOf("r")
	assert.Equal(t, int16(29), produce(r), "TOPIC_AUTHORIZATION_FAILED, not NOT_LEADER_OR_FOLLOWER")
	assert.Equal(t, int16(6), produce(w))
	assert.Equal(t, int16(30), beat(w), "GROUP_AUTHORIZATION_FAILED")
	assert.Equal(t, int16(16), beat(r), "NOT_COORDINATOR")

	node.setLeader("n2", addr)
	assert.Equal(t, int16(30), beat(w))
	assert.Equal(t, int16(0), beat(r))
	assert.Equal(t, int16(0), produce(w))
}
