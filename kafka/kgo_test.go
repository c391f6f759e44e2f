package kafka_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// TestKgo_ProduceFetchRoundTrip produces with franz-go, reads the messages
// back natively and through Kafka fetches, key, value and headers intact.
func TestKgo_ProduceFetchRoundTrip(t *testing.T) {
	e, addr := setup(t, map[string]int{"orders": 3})
	ctx := testCtx(t)
	p := kclient(t, addr, kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	for i := range 30 {
		r := &kgo.Record{Partition: int32(i % 3), Key: fmt.Appendf(nil, "k%d", i), Value: fmt.Appendf(nil, "v%d", i),
			Headers: []kgo.RecordHeader{{Key: "h", Value: fmt.Appendf(nil, "x%d", i)}}}
		require.NoError(t, p.ProduceSync(ctx, r).FirstErr())
		assert.Equal(t, int64(i/3), r.Offset)
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "orders", Queue: 1, Offset: 0, Max: 100})
	require.NoError(t, err)
	require.Len(t, res.Messages, 10)
	m := res.Messages[2]
	assert.Equal(t, []string{"k7"}, m.Keys)
	assert.Equal(t, "v7", string(m.Body))
	assert.Equal(t, map[string]string{"h": "x7"}, m.Properties)

	c := kclient(t, addr, kgo.ConsumeTopics("orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := pollN(ctx, t, c, 30)
	seen := map[string]bool{}
	for _, r := range recs {
		i := 0
		_, err := fmt.Sscanf(string(r.Value), "v%d", &i)
		require.NoError(t, err)
		assert.Equal(t, int32(i%3), r.Partition)
		assert.Equal(t, int64(i/3), r.Offset)
		assert.Equal(t, fmt.Sprintf("k%d", i), string(r.Key))
		require.Len(t, r.Headers, 1)
		assert.Equal(t, fmt.Sprintf("x%d", i), string(r.Headers[0].Value))
		seen[string(r.Value)] = true
	}
	assert.Len(t, seen, 30)
}

// TestKgo_ListOffsets asks for the earliest, latest and by-time offsets
// through kadm; by time is the first message stored at or after it.
func TestKgo_ListOffsets(t *testing.T) {
	e, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	send := func(n int) time.Time {
		var at time.Time
		for i := range n {
			r, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte{byte(i)}}}})
			require.NoError(t, err)
			if i == 0 {
				at = r.StoredAt
			}
		}
		return at
	}
	send(5)
	// Stored times are in milliseconds on the wire: the second series starts
	// in a later millisecond.
	mark := time.Now().Add(2 * time.Millisecond)
	for !time.Now().After(mark) {
		time.Sleep(time.Millisecond)
	}
	second := send(5)
	adm := kadmin(t, addr)
	start, err := adm.ListStartOffsets(ctx, "t")
	require.NoError(t, err)
	end, err := adm.ListEndOffsets(ctx, "t")
	require.NoError(t, err)
	at, err := adm.ListOffsetsAfterMilli(ctx, second.UnixMilli(), "t")
	require.NoError(t, err)
	s, _ := start.Lookup("t", 0)
	en, _ := end.Lookup("t", 0)
	a, _ := at.Lookup("t", 0)
	require.NoError(t, s.Err)
	assert.Equal(t, int64(0), s.Offset)
	assert.Equal(t, int64(10), en.Offset)
	assert.Equal(t, int64(5), a.Offset)
	after, err := adm.ListOffsetsAfterMilli(ctx, time.Now().Add(time.Hour).UnixMilli(), "t")
	require.NoError(t, err)
	x, _ := after.Lookup("t", 0)
	assert.Equal(t, int64(10), x.Offset, "a time after every message: kadm takes the -1 answered for the end")
}

// waitSpy is an engine that reports when a fetch starts waiting.
type waitSpy struct {
	*equeue.Engine
	waiting chan struct{}
}

func (w *waitSpy) WaitAny(ctx context.Context, pulls []*equeue.PullRequest, d time.Duration) error {
	select {
	case w.waiting <- struct{}{}:
	default:
	}
	return w.Engine.WaitAny(ctx, pulls, d)
}

// TestKgo_FetchLongPollWokenByAppend: a fetch waiting at the end of a
// partition with a long MaxWait is answered as soon as a message is appended.
func TestKgo_FetchLongPollWokenByAppend(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	spy := &waitSpy{Engine: e, waiting: make(chan struct{}, 1)}
	addr := serve(t, spy, nil)
	c := kclient(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 50_000, 1, 1<<20
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
		t.Fatalf("fetch answered before waiting: %v %v", a.resp, a.err)
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 1, Messages: []*equeue.Message{{Body: []byte("late")}}})
	require.NoError(t, err)
	// The fetch waits up to 50 s; the test's context (1 min) would end first
	// if the append did not wake it.
	a := <-got
	require.NoError(t, a.err)
	resp := a.resp.(*kmsg.FetchResponse)
	require.Len(t, resp.Topics, 1)
	p1 := resp.Topics[0].Partitions[1]
	require.Equal(t, int16(0), p1.ErrorCode)
	assert.Equal(t, int64(1), p1.HighWatermark)
	var batch kmsg.RecordBatch
	require.NoError(t, batch.ReadFrom(p1.RecordBatches))
	assert.Equal(t, int32(1), batch.NumRecords)
}
