package kafka_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// TestProduce_IdempotentSequenceWrapsInsideABatch: sequence numbers wrap
// from MaxInt32 to 0 (Kafka's DefaultRecordBatch.incrementSequence, which
// franz-go and the Java client follow), also inside one batch: the batch
// after one that spans the wrap continues from its wrapped last sequence,
// and a retry of the spanning batch is acknowledged, not stored again.
func TestProduce_IdempotentSequenceWrapsInsideABatch(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), init.ErrorCode)
	pid, epoch := init.ProducerID, init.ProducerEpoch

	// Sequences MaxInt32-1, MaxInt32, 0.
	span := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, math.MaxInt32-1, "a", "b", "c"))
	require.Equal(t, int16(0), span.ErrorCode)
	assert.Equal(t, int64(0), span.BaseOffset)
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 1, "d"))
	require.Equal(t, int16(0), next.ErrorCode, "the batch after the wrap starts at sequence 1")
	assert.Equal(t, int64(3), next.BaseOffset)
	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, math.MaxInt32-1, "a", "b", "c"))
	require.Equal(t, int16(0), retry.ErrorCode)
	assert.Equal(t, int64(0), retry.BaseOffset, "a retry of the spanning batch is a duplicate")
}

// TestGroups_JoinNeedsAProtocolEveryMemberSupports: a member may join a
// group only if one protocol is supported by it and every member already
// there, as Kafka's GenericGroup.supportsProtocols has it; sharing one
// protocol with some member is not enough. Otherwise the group would be
// given a protocol some member does not know.
func TestGroups_JoinNeedsAProtocolEveryMemberSupports(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	a, b, c := kclient(t, addr), kclient(t, addr), kclient(t, addr)
	join := func(cl *kgo.Client, id string, protos ...string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "g", id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30_000, 1_000
		for _, p := range protos {
			req.Protocols = append(req.Protocols, kmsg.JoinGroupRequestProtocol{Name: p, Metadata: []byte("m")})
		}
		return requestJoin(ctx, t, cl, req)
	}
	ja := join(a, "", "x", "y")
	require.Equal(t, int16(0), ja.ErrorCode)
	jb := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { jb <- join(b, "", "y", "z") }()
	require.Eventually(t, func() bool {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = "g", ja.Generation, ja.MemberID
		resp, err := hb.RequestWith(ctx, a)
		require.NoError(t, err)
		return resp.ErrorCode == 27 // REBALANCE_IN_PROGRESS: b is joining
	}, 30*time.Second, time.Millisecond)
	ja2 := join(a, ja.MemberID, "x", "y")
	require.Equal(t, int16(0), ja2.ErrorCode)
	jb2 := <-jb
	require.Equal(t, int16(0), jb2.ErrorCode)
	require.Equal(t, "y", *ja2.Protocol)

	// c supports x (a's) and z (b's), but no protocol both support.
	jc := join(c, "", "x", "z")
	assert.Equal(t, int16(23), jc.ErrorCode, "INCONSISTENT_GROUP_PROTOCOL")
}

// TestKgo_LogAppendTimeIsEachMessagesStoredTime: with LogAppendTime every
// fetched record carries the time the engine stored it. A batch marked
// LogAppendTime gives all its records the batch's MaxTimestamp (Kafka's
// rule, followed by franz-go and the Java client), so messages stored at
// different times must not share one such batch.
func TestKgo_LogAppendTimeIsEachMessagesStoredTime(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr := serve(t, e, &kafka.Options{LogAppendTime: true})
	var stored []time.Time
	for i := range 3 {
		if i > 0 {
			// The next message is stored in a later millisecond.
			mark := stored[i-1].Add(2 * time.Millisecond)
			for !time.Now().After(mark) {
				time.Sleep(time.Millisecond)
			}
		}
		r, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte{byte(i)}, BornAt: time.UnixMilli(1_600_000_000_000)}}})
		require.NoError(t, err)
		stored = append(stored, r.StoredAt)
	}
	c := kclient(t, addr, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := pollN(ctx, t, c, 3)
	for i, r := range recs {
		assert.Equal(t, stored[i].UnixMilli(), r.Timestamp.UnixMilli(), "record %d", i)
		assert.Equal(t, int8(1), r.Attrs.TimestampType(), "LogAppendTime")
	}
}

// TestSecurity_LargeFrameBeforeAuthenticationCloses: with tokens, a
// connection that has not authenticated may only send the small SASL
// requests; a frame announcing tens of megabytes closes it at once (as
// Kafka bounds requests before authentication to 512 KiB) instead of the
// listener setting aside the announced size for a peer it does not know.
func TestSecurity_LargeFrameBeforeAuthenticationCloses(t *testing.T) {
	e := openEngine(t, nil)
	addr := serve(t, e, &kafka.Options{Tokens: map[string]kafka.Rights{"s3cret": kafka.RightAll}})
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	_, err = nc.Write(binary.BigEndian.AppendUint32(nil, 64<<20))
	require.NoError(t, err)
	// The deadline only keeps a broken listener from hanging the test.
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(20*time.Second)))
	_, err = nc.Read(make([]byte, 1))
	require.Error(t, err)
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the listener kept the connection open: %v", err)
}

// TestFetch_MinBytesWaitWokenByAppendToAPartitionWithData: a fetch that
// found fewer than MinBytes waits for appends to any of its partitions,
// also those that had something already, and is answered once they bring
// MinBytes; it does not sleep through them until MaxWait.
func TestFetch_MinBytesWaitWokenByAppendToAPartitionWithData(t *testing.T) {
	e := openEngine(t, &equeue.Options{MaxPullWait: 10 * time.Minute})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: []*equeue.Message{{Body: []byte("first")}}})
	require.NoError(t, err)
	spy := &waitSpy{Engine: e, waiting: make(chan struct{}, 1)}
	addr := serve(t, spy, nil)
	c := kclient(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 5*60_000, 2000, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	for p := range int32(2) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	req.Topics = append(req.Topics, ft)
	type answer struct {
		resp kmsg.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() {
		resp, err := c.Request(ctx, req)
		got <- answer{resp, err}
	}()
	select {
	case <-spy.waiting:
	case a := <-got:
		t.Fatalf("fetch answered with fewer than MinBytes before waiting: %v %v", a.resp, a.err)
	}
	msgs := make([]*equeue.Message, 10)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: make([]byte, 500)}
	}
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 0, Messages: msgs})
	require.NoError(t, err)
	var a answer
	select {
	case a = <-got:
	case <-time.After(30 * time.Second): // only keeps a broken listener from hanging the test
		t.Fatal("the appends to partition 0 did not wake the fetch")
	}
	require.NoError(t, a.err)
	p0 := a.resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
	require.Equal(t, int16(0), p0.ErrorCode)
	assert.GreaterOrEqual(t, len(p0.RecordBatches), 2000)
}

// TestGroups_CommitWithoutGenerationToAnEmptyGroup: a group with no members
// only stores offsets, so a commit with generation -1 is taken whatever
// member ID it names (Kafka's simple consumers and admin tools).
func TestGroups_CommitWithoutGenerationToAnEmptyGroup(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	cl := kclient(t, addr, namedCommits())
	for _, member := range []string{"", "tool-1"} {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = "g-"+member, -1, member
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = "t"
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 0, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		resp, err := oc.RequestWith(ctx, cl)
		require.NoError(t, err)
		assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode, "member %q", member)
	}
}

// TestFetch_LogAppendTimeBatchesWithinByteBudget: with LogAppendTime a
// partition's messages stored in different milliseconds go in different
// record batches, and each batch's header counts against the fetch's
// byte bounds: an answer stays within MaxBytes and PartitionMaxBytes (but
// for a first message larger than them), as a client that sized its
// receive buffer by them (librdkafka's receive.message.max.bytes) needs,
// and consecutive fetches still return every message once.
func TestFetch_LogAppendTimeBatchesWithinByteBudget(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	addr := serve(t, e, &kafka.Options{LogAppendTime: true})
	const n = 40
	var last time.Time
	for i := range n {
		// Each message is stored in a later millisecond than the one before.
		for i > 0 && time.Now().UnixMilli() <= last.UnixMilli() {
			time.Sleep(time.Millisecond)
		}
		r, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte{byte(i)}}}})
		require.NoError(t, err)
		last = r.StoredAt
	}
	b := kclient(t, addr).SeedBrokers()[0]
	const budget = 400
	var offsets []int64
	for next := int64(0); next < n; {
		req := kmsg.NewPtrFetchRequest()
		req.SetVersion(12)
		req.MaxBytes, req.MaxWaitMillis, req.ReplicaID, req.SessionEpoch = budget, 0, -1, -1
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LogStartOffset = 0, next, budget, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		p := resp.(*kmsg.FetchResponse).Topics[0].Partitions[0]
		require.Equal(t, int16(0), p.ErrorCode)
		require.LessOrEqual(t, len(p.RecordBatches), budget, "fetch at %d", next)
		raw := p.RecordBatches
		for len(raw) > 0 {
			var rb kmsg.RecordBatch
			require.NoError(t, rb.ReadFrom(raw))
			raw = raw[12+rb.Length:]
			for k := range rb.NumRecords {
				offsets = append(offsets, rb.FirstOffset+int64(k))
			}
			next = rb.FirstOffset + int64(rb.LastOffsetDelta) + 1
		}
	}
	want := make([]int64, n)
	for i := range want {
		want[i] = int64(i)
	}
	assert.Equal(t, want, offsets, "every message once, in order")
}

// rawRequest writes req (a version without flexible headers) on nc and
// returns the body of its answer.
func rawRequest(t *testing.T, nc net.Conn, correlation int32, req kmsg.Request) ([]byte, error) {
	t.Helper()
	h := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	h = binary.BigEndian.AppendUint16(h, uint16(req.GetVersion()))
	h = binary.BigEndian.AppendUint32(h, uint32(correlation))
	h = binary.BigEndian.AppendUint16(h, 0xffff) // no client ID
	h = req.AppendTo(h)
	if _, err := nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(h))), h...)); err != nil {
		return nil, err
	}
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		return nil, err
	}
	b := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, b); err != nil {
		return nil, err
	}
	return b[4:], nil // after the correlation ID
}

// TestSecurity_FailedSASLAuthenticationClosesTheConnection: a refused
// SaslAuthenticate is answered, then the connection closes, as Kafka does:
// a client cannot try one token after another on one connection.
func TestSecurity_FailedSASLAuthenticationClosesTheConnection(t *testing.T) {
	e := openEngine(t, nil)
	addr := serve(t, e, &kafka.Options{Tokens: map[string]kafka.Rights{"s3cret": kafka.RightAll}})
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	// The deadline only keeps a broken listener from hanging the test.
	require.NoError(t, nc.SetDeadline(time.Now().Add(20*time.Second)))

	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = "PLAIN"
	_, err = rawRequest(t, nc, 1, hs)
	require.NoError(t, err)
	auth := kmsg.NewPtrSASLAuthenticateRequest()
	auth.SetVersion(1)
	auth.SASLAuthBytes = []byte("\x00user\x00wrong")
	b, err := rawRequest(t, nc, 2, auth)
	require.NoError(t, err, "the refusal is answered")
	resp := kmsg.NewPtrSASLAuthenticateResponse()
	resp.SetVersion(1)
	require.NoError(t, resp.ReadFrom(b))
	assert.Equal(t, kerr.SaslAuthenticationFailed.Code, resp.ErrorCode)

	// A second try on the same connection finds it closed.
	auth.SASLAuthBytes = []byte("\x00user\x00s3cret")
	_, err = rawRequest(t, nc, 3, auth)
	require.Error(t, err)
	var ne net.Error
	assert.False(t, errors.As(err, &ne) && ne.Timeout(), "the listener kept the connection open: %v", err)
}

// TestGroups_JoinRefusesAGroupNameTheEngineCannotStore: a group whose
// name the engine refuses could never commit its offsets, so its members
// would consume without ever recording it; the join is refused with
// INVALID_GROUP_ID (as a commit or an offset fetch of that name is), and
// no group is left behind.
func TestGroups_JoinRefusesAGroupNameTheEngineCannotStore(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	b := kclient(t, addr).SeedBrokers()[0]
	for _, name := range []string{"bad group", strings.Repeat("g", 128)} {
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = name, 30000, 30000, "consumer"
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		resp, err := b.Request(ctx, jg)
		require.NoError(t, err)
		j := resp.(*kmsg.JoinGroupResponse)
		assert.Equal(t, kerr.InvalidGroupID.Code, j.ErrorCode, "group %q", name)
		assert.Equal(t, int32(-1), j.Generation)
	}
	lresp, err := b.Request(ctx, kmsg.NewPtrListGroupsRequest())
	require.NoError(t, err)
	assert.Empty(t, lresp.(*kmsg.ListGroupsResponse).Groups)
}

// TestGroups_CommitFencing: while a classic group has members, a commit
// is taken only from a member of its current generation; the others are
// refused with Kafka's codes (its ClassicGroup.validateOffsetCommit, and
// franz-go's kfake): a member ID the group does not know, or no member ID
// at all (a tool committing without a generation), UNKNOWN_MEMBER_ID; a
// known member with another generation, ILLEGAL_GENERATION. A refused
// commit stores nothing.
func TestGroups_CommitFencing(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	for range 5 { // the offset committed is within the partition
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	b := kclient(t, addr).SeedBrokers()[0]
	j := joinAlone(ctx, t, b, "g")
	commit := func(generation int32, member string, offset int64) int16 {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation, oc.MemberID = "g", generation, member
		oct := kmsg.NewOffsetCommitRequestTopic()
		oct.Topic = "t"
		oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset, LeaderEpoch: -1}}
		oc.Topics = append(oc.Topics, oct)
		resp, err := b.Request(ctx, namedCommit{oc})
		require.NoError(t, err)
		return resp.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
	}
	assert.Equal(t, kerr.UnknownMemberID.Code, commit(-1, "", 5), "no member, no generation")
	assert.Equal(t, kerr.UnknownMemberID.Code, commit(j.Generation, "stranger", 5), "unknown member")
	assert.Equal(t, kerr.IllegalGeneration.Code, commit(-1, j.MemberID, 5), "member without its generation")
	assert.Equal(t, kerr.IllegalGeneration.Code, commit(j.Generation-1, j.MemberID, 5), "stale generation")

	offs, err := kadmin(t, addr).FetchOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Empty(t, offs, "nothing stored")

	assert.Equal(t, int16(0), commit(j.Generation, j.MemberID, 5), "the member of the generation")
}

// TestGroups_JoinRefusedWhileANativeGroupOfThatNameHasMembers: a native
// consumer group's own commits rule its offsets, so a Kafka member could
// consume under its name but never commit. Its join is refused with
// GROUP_AUTHORIZATION_FAILED (classic JoinGroup and KIP-848 heartbeat
// alike) while the native group has members; once it has none, until it
// is deleted (TestGroups_NativeGroupNameIsRefusedWithoutMembers), and
// taken once it is.
func TestGroups_JoinRefusedWhileANativeGroupOfThatNameHasMembers(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "billing", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	b := kclient(t, addr).SeedBrokers()[0]
	join := func() int16 {
		jg := kmsg.NewPtrJoinGroupRequest()
		jg.Group, jg.SessionTimeoutMillis, jg.RebalanceTimeoutMillis, jg.ProtocolType = "billing", 30000, 1000, "consumer"
		jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
		return requestJoin(ctx, t, b, jg).ErrorCode
	}
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.MemberEpoch, hb.RebalanceTimeoutMillis = "billing", "m1", 0, 30000
	hb.SubscribedTopicNames = []string{"t"}
	hb.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := b.Request(ctx, hb)
	require.NoError(t, err)
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, resp.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode, "KIP-848")
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, join(), "classic")

	require.NoError(t, c.Close())
	assert.Equal(t, kerr.GroupAuthorizationFailed.Code, join(), "no native member left: the group is still there")
	require.NoError(t, e.DeleteGroup(ctx, "billing", equeue.DeleteGroupOptions{}))
	assert.Equal(t, int16(0), join(), "the native group deleted")
}

// TestGroups_CommitPastTheEndIsOutOfRange: an OffsetCommit past a
// partition's end is refused with OFFSET_OUT_OF_RANGE and stores nothing
// (the group's next consumer would start at the end as it is then, past
// the records produced meanwhile); the end itself, and the request's
// other partitions, are stored.
func TestGroups_CommitPastTheEndIsOutOfRange(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	for range 3 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
		require.NoError(t, err)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g", -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "t"
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 3, LeaderEpoch: -1}, {Partition: 1, Offset: 100, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, oct)
	resp, err := oc.RequestWith(ctx, kclient(t, addr, namedCommits()))
	require.NoError(t, err)
	ps := resp.Topics[0].Partitions
	require.Len(t, ps, 2)
	assert.Equal(t, int16(0), ps[0].ErrorCode, "the end of partition 0")
	assert.Equal(t, kerr.OffsetOutOfRange.Code, ps[1].ErrorCode, "past the end of partition 1, which is empty")
	got, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 3}, got)
}

// TestGroups_ListGroupsStatesFilterIgnoresCase: ListGroups' states filter
// matches a group's state whatever its case, as Kafka parses states
// (ConsumerGroupState.parse upper-cases the name).
func TestGroups_ListGroupsStatesFilterIgnoresCase(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	require.NoError(t, e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 0}))
	b := kclient(t, addr).SeedBrokers()[0]
	for _, state := range []string{"Empty", "empty", "EMPTY"} {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = 4
		req.StatesFilter = []string{state}
		resp, err := b.Request(ctx, req)
		require.NoError(t, err)
		groups := resp.(*kmsg.ListGroupsResponse).Groups
		require.Len(t, groups, 1, "states filter %q", state)
		assert.Equal(t, "g", groups[0].Group)
	}
}
