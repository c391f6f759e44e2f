package kafka_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestProtocol_ApiVersionsTooNew: an ApiVersions request of a version the
// listener does not serve gets UNSUPPORTED_VERSION in a v0 answer that
// lists the versions it does serve, as Kafka brokers do.
func TestProtocol_ApiVersionsTooNew(t *testing.T) {
	_, addr := setup(t, nil)
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	req := kmsg.NewPtrApiVersionsRequest()
	req.SetVersion(req.MaxVersion()) // beyond the v3 served
	req.ClientSoftwareName, req.ClientSoftwareVersion = "test", "1"
	body := kmsg.NewRequestFormatter(kmsg.FormatterClientID("raw")).AppendRequest(nil, req, 42)
	_, err = nc.Write(body)
	require.NoError(t, err)
	var size [4]byte
	_, err = io.ReadFull(nc, size[:])
	require.NoError(t, err)
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(nc, buf)
	require.NoError(t, err)
	assert.Equal(t, uint32(42), binary.BigEndian.Uint32(buf), "correlation ID")
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(0)
	require.NoError(t, resp.ReadFrom(buf[4:]))
	assert.Equal(t, int16(35), resp.ErrorCode, "UNSUPPORTED_VERSION")
	var apiVersions kmsg.ApiVersionsResponseApiKey
	for _, k := range resp.ApiKeys {
		if k.ApiKey == 18 {
			apiVersions = k
		}
		if k.ApiKey == 0 {
			assert.Equal(t, int16(0), k.MinVersion, "Produce is advertised from v0")
		}
	}
	assert.Equal(t, int16(3), apiVersions.MaxVersion)
}

// TestProtocol_PipelinedResponsesInOrder: requests sent back to back on one
// connection, a slow long-poll fetch first, are answered in request order.
func TestProtocol_PipelinedResponsesInOrder(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	f := kmsg.NewRequestFormatter()
	fetch := kmsg.NewPtrFetchRequest()
	fetch.SetVersion(11)
	fetch.MaxWaitMillis, fetch.MinBytes, fetch.MaxBytes = 300, 1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.PartitionMaxBytes = 1 << 20
	ft.Partitions = append(ft.Partitions, fp)
	fetch.Topics = append(fetch.Topics, ft)
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(9)
	// One write with three requests (the formatter sizes a frame by its
	// whole buffer, so each is formatted alone).
	var out []byte
	out = append(out, f.AppendRequest(nil, fetch, 1)...)
	out = append(out, f.AppendRequest(nil, meta, 2)...)
	out = append(out, f.AppendRequest(nil, meta, 3)...)
	_, err = nc.Write(out)
	require.NoError(t, err)
	for want := uint32(1); want <= 3; want++ {
		var size [4]byte
		_, err = io.ReadFull(nc, size[:])
		require.NoError(t, err)
		buf := make([]byte, binary.BigEndian.Uint32(size[:]))
		_, err = io.ReadFull(nc, buf)
		require.NoError(t, err)
		assert.Equal(t, want, binary.BigEndian.Uint32(buf))
	}
}

// TestGroups_FollowerSyncWaitsForLeader: a follower's SyncGroup is answered
// when the leader's assignment arrives, with the part the leader gave it.
func TestGroups_FollowerSyncWaitsForLeader(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	a, b := kclient(t, addr), kclient(t, addr)
	join := func(cl *kgo.Client, id string) *kmsg.JoinGroupResponse {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Group, req.MemberID, req.ProtocolType = "g", id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 30_000, 30_000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte("m")}}
		resp := requestJoin(ctx, t, cl, req)
		require.Equal(t, int16(0), resp.ErrorCode)
		return resp
	}
	sync := func(cl *kgo.Client, gen int32, id string, assign map[string]string) *kmsg.SyncGroupResponse {
		req := kmsg.NewPtrSyncGroupRequest()
		req.Group, req.Generation, req.MemberID = "g", gen, id
		for m, v := range assign {
			req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: m, MemberAssignment: []byte(v)})
		}
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp
	}
	ja := join(a, "")
	require.Equal(t, ja.MemberID, ja.LeaderID, "the only member leads")
	require.Equal(t, int16(0), sync(a, ja.Generation, ja.MemberID, map[string]string{ja.MemberID: "all"}).ErrorCode)

	// b joins; a learns of the rebalance through its heartbeat and rejoins.
	jb := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { jb <- join(b, "") }()
	require.Eventually(t, func() bool {
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.Group, hb.Generation, hb.MemberID = "g", ja.Generation, ja.MemberID
		resp, err := hb.RequestWith(ctx, a)
		require.NoError(t, err)
		return resp.ErrorCode == 27 // REBALANCE_IN_PROGRESS
	}, 30*time.Second, time.Millisecond)
	ja2 := join(a, ja.MemberID)
	jb2 := <-jb
	require.Equal(t, ja2.Generation, jb2.Generation)
	require.Equal(t, ja.MemberID, ja2.LeaderID, "the leader stays")
	assert.Len(t, ja2.Members, 2, "the leader sees every member")
	assert.Empty(t, jb2.Members)

	follower := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { follower <- sync(b, jb2.Generation, jb2.MemberID, nil) }()
	// Until the leader syncs the group is completing and the follower waits.
	require.Eventually(t, func() bool {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"g"}
		resp, err := req.RequestWith(ctx, a)
		require.NoError(t, err)
		return resp.Groups[0].State == "CompletingRebalance"
	}, 30*time.Second, time.Millisecond)
	select {
	case r := <-follower:
		t.Fatalf("the follower's sync returned before the leader's: %+v", r)
	default:
	}
	la := sync(a, ja2.Generation, ja2.MemberID, map[string]string{ja2.MemberID: "p0", jb2.MemberID: "p1"})
	require.Equal(t, int16(0), la.ErrorCode)
	assert.Equal(t, "p0", string(la.MemberAssignment))
	fb := <-follower
	require.Equal(t, int16(0), fb.ErrorCode)
	assert.Equal(t, "p1", string(fb.MemberAssignment))
}

// TestProtocol_FetchByteBudget: a fetch returns whole messages within its
// byte budget, the first one even when larger (so a consumer never stalls),
// and still reports every partition's high watermark.
func TestProtocol_FetchByteBudget(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	big := make([]byte, 1000)
	for q := range 2 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: big}, {Body: big}}})
		require.NoError(t, err)
	}
	ps := fetchTwoPartitions(ctx, t, addr, 500)
	var b kmsg.RecordBatch
	require.NoError(t, b.ReadFrom(ps[0].RecordBatches))
	assert.Equal(t, int32(1), b.NumRecords, "the first message, alone, though larger than the budget")
	assert.Empty(t, ps[1].RecordBatches, "no room left")
	for _, p := range ps {
		assert.Equal(t, int16(0), p.ErrorCode)
		assert.Equal(t, int64(2), p.HighWatermark)
	}
}

// rawProduce is a produce request (v7) of one record with body to
// partition part of topic "t", with acks.
func rawProduce(acks int16, part int32, body string) *kmsg.ProduceRequest {
	prod := kmsg.NewPtrProduceRequest()
	prod.SetVersion(7)
	prod.Acks, prod.TimeoutMillis = acks, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition = part
	rp.Records = rawBatch(-1, -1, -1, body)
	rt.Partitions = append(rt.Partitions, rp)
	prod.Topics = append(prod.Topics, rt)
	return prod
}

// TestProtocol_AcksZeroGetsNoAnswer: a produce with acks=0 is stored and
// not answered; the next request's answer is the next frame.
func TestProtocol_AcksZeroGetsNoAnswer(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	f := kmsg.NewRequestFormatter()
	prod := rawProduce(0, 0, "fire and forget")
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(4)
	out := append(f.AppendRequest(nil, prod, 7), f.AppendRequest(nil, meta, 8)...)
	_, err = nc.Write(out)
	require.NoError(t, err)
	var size [4]byte
	_, err = io.ReadFull(nc, size[:])
	require.NoError(t, err)
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(nc, buf)
	require.NoError(t, err)
	assert.Equal(t, uint32(8), binary.BigEndian.Uint32(buf), "the metadata answer comes first")
	ti, err := e.Topic(testCtx(t), "t")
	require.NoError(t, err)
	assert.Equal(t, int64(1), ti.Queues[0].MaxOffset, "stored")
}

// TestProtocol_FindCoordinatorBatched: v4+ asks for several groups at once;
// every one is coordinated here. Transaction coordinators do not exist.
func TestProtocol_FindCoordinatorBatched(t *testing.T) {
	_, addr := setup(t, nil)
	ctx := testCtx(t)
	cl := kclient(t, addr)
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKeys = []string{"g1", "g2"}
	resp, err := req.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, resp.Coordinators, 2)
	host, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	var keys []string
	for _, c := range resp.Coordinators {
		keys = append(keys, c.Key)
		assert.Equal(t, int16(0), c.ErrorCode)
		assert.Equal(t, host, c.Host)
		assert.Equal(t, port, fmt.Sprint(c.Port))
	}
	assert.ElementsMatch(t, []string{"g1", "g2"}, keys, "franz-go may reorder the keys it sends")
	txn := kmsg.NewPtrFindCoordinatorRequest()
	txn.CoordinatorType, txn.CoordinatorKeys = 1, []string{"tx"}
	tresp, err := txn.RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Len(t, tresp.Coordinators, 1)
	assert.Equal(t, int16(42), tresp.Coordinators[0].ErrorCode, "INVALID_REQUEST: no transactions")
}

// TestProtocol_AcksZeroFailureClosesTheConnection: a produce with acks=0
// that fails is not answered either, so the listener closes the
// connection, as Kafka does: the producer sees the failure as a broken
// connection instead of not at all.
func TestProtocol_AcksZeroFailureClosesTheConnection(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	f := kmsg.NewRequestFormatter()
	prod := rawProduce(0, 5, "lost") // no partition 5
	meta := kmsg.NewPtrMetadataRequest()
	meta.SetVersion(4)
	out := append(f.AppendRequest(nil, prod, 7), f.AppendRequest(nil, meta, 8)...)
	_, err = nc.Write(out)
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	var size [4]byte
	_, err = io.ReadFull(nc, size[:])
	assert.ErrorIs(t, err, io.EOF, "the connection is closed, with no answer to the metadata request after it")
	ti, err := e.Topic(testCtx(t), "t")
	require.NoError(t, err)
	assert.Equal(t, int64(0), ti.Queues[0].MaxOffset, "nothing stored")
}

// TestProtocol_InvalidAcksRefused: a produce whose acks is none of -1, 0
// and 1 is refused with INVALID_REQUIRED_ACKS and stores nothing.
func TestProtocol_InvalidAcksRefused(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	nc, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer func() { _ = nc.Close() }()
	prod := rawProduce(2, 0, "x")
	_, err = nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, prod, 7))
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	var size [4]byte
	_, err = io.ReadFull(nc, size[:])
	require.NoError(t, err)
	buf := make([]byte, binary.BigEndian.Uint32(size[:]))
	_, err = io.ReadFull(nc, buf)
	require.NoError(t, err)
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(7)
	require.NoError(t, resp.ReadFrom(buf[4:]))
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 1)
	assert.Equal(t, kerr.InvalidRequiredAcks.Code, resp.Topics[0].Partitions[0].ErrorCode)
	ti, err := e.Topic(testCtx(t), "t")
	require.NoError(t, err)
	assert.Equal(t, int64(0), ti.Queues[0].MaxOffset, "nothing stored")
}

// fetchTwoPartitions fetches partitions 0 and 1 of topic "t" from offset 0
// at once (no wait, 1 MiB a partition) with a request budget of maxBytes,
// and returns the two partitions' answers.
func fetchTwoPartitions(ctx context.Context, t *testing.T, addr string, maxBytes int32) []kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, maxBytes
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "t"
	for p := range int32(2) {
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.PartitionMaxBytes = p, 1<<20
		ft.Partitions = append(ft.Partitions, fp)
	}
	req.Topics = append(req.Topics, ft)
	resp, err := req.RequestWith(ctx, kclient(t, addr))
	require.NoError(t, err)
	ps := resp.Topics[0].Partitions
	require.Len(t, ps, 2)
	return ps
}
