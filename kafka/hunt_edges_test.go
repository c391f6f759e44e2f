package kafka_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
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

// listenerOnly serves one engine with a listener that stops and starts
// again on the same address, the engine staying open.
type listenerOnly struct {
	t    *testing.T
	e    *equeue.Engine
	addr string
	s    *kafka.Server
	done chan error
}

func (l *listenerOnly) start() {
	l.t.Helper()
	s, err := kafka.NewServer(l.e, nil)
	require.NoError(l.t, err)
	addr := l.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lis net.Listener
	require.Eventually(l.t, func() bool { // the port may take a moment to be free again
		lis, err = net.Listen("tcp", addr)
		return err == nil
	}, 10*time.Second, 20*time.Millisecond)
	l.addr, l.s, l.done = lis.Addr().String(), s, make(chan error, 1)
	go func(done chan error) { done <- s.Serve(lis) }(l.done)
}

func (l *listenerOnly) stop() {
	l.t.Helper()
	if l.s == nil {
		return
	}
	require.NoError(l.t, l.s.Close())
	require.ErrorIs(l.t, <-l.done, kafka.ErrServerClosed)
	l.s = nil
}

// partitionValues are the values partition q of topic holds, in order.
func partitionValues(ctx context.Context, t *testing.T, e *equeue.Engine, topic string, q int) []string {
	t.Helper()
	var out []string
	for off := int64(0); ; {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q, Offset: off, Max: 1000})
		require.NoError(t, err)
		for _, m := range res.Messages {
			out = append(out, string(m.Body))
		}
		if len(res.Messages) == 0 || res.NextOffset >= res.MaxOffset {
			return out
		}
		off = res.NextOffset
	}
}

// TestKgo_IdempotentSequenceAcrossAListenerRestart: franz-go's idempotent
// producer goes on with its producer ID and sequence numbers over a
// restart of the listener alone (the engine stays open; the topic has no
// dedup window), twice, while a producer that starts after the first
// restart sends from sequence 0: the new listener, which knows nothing of
// the first producer, reads its last records back and takes its next
// batches in sequence. Every record is stored once, each partition in the
// order it was sent.
func TestKgo_IdempotentSequenceAcrossAListenerRestart(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 3))
	l := &listenerOnly{t: t, e: e}
	l.start()
	t.Cleanup(l.stop)

	opts := []kgo.Opt{kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RecordRetries(1_000), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond })}
	first := kclient(t, l.addr, opts...)
	want := map[int][]string{}
	send := func(cl *kgo.Client, name string, from, to int) {
		t.Helper()
		var recs []*kgo.Record
		for i := from; i < to; i++ {
			v := fmt.Sprintf("%s-%04d", name, i)
			recs = append(recs, &kgo.Record{Partition: int32(i % 3), Value: []byte(v)})
			want[i%3] = append(want[i%3], v)
		}
		require.NoError(t, cl.ProduceSync(ctx, recs...).FirstErr(), "%s %d..%d", name, from, to)
	}
	send(first, "first", 0, 90)
	l.stop()
	l.start()
	send(first, "first", 90, 180) // sequences go on from where they were
	second := kclient(t, l.addr, opts...)
	send(second, "second", 0, 60)
	l.stop()
	l.start()
	send(second, "second", 60, 120)
	send(first, "first", 180, 270)

	for q := range 3 {
		assert.Equal(t, want[q], partitionValues(ctx, t, e, "t", q), "partition %d", q)
	}
}

// TestFetch_AtExactlyTheLogStartAfterRetention: once retention moved a
// partition's low watermark, a fetch at exactly it returns its records
// from it, one below it is OFFSET_OUT_OF_RANGE, and a franz-go consumer
// asked to start there, and one reset to the start, read the records
// left, and no more; a group whose commit is below the watermark
// resumes at it (the client's reset, the commit being out of range).
func TestFetch_AtExactlyTheLogStartAfterRetention(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 10}}))
	addr := serve(t, e, nil)
	for i := range 4 {
		msgs := make([]*equeue.Message, 6)
		for j := range msgs {
			msgs[j] = &equeue.Message{Body: fmt.Appendf(nil, "v%02d", i*6+j)}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "g", -1
	oct := kmsg.NewOffsetCommitRequestTopic()
	oct.Topic = "t"
	oct.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1, LeaderEpoch: -1}}
	oc.Topics = append(oc.Topics, oct)
	var low, end int64
	require.Eventually(t, func() bool {
		ti, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		low, end = ti.Queues[0].MinOffset, ti.Queues[0].MaxOffset
		return end-low <= 10
	}, 10*time.Second, 10*time.Millisecond, "the topic is trimmed to its limit")
	require.Positive(t, low)
	require.Equal(t, int64(24), end)
	wantFrom := func(from int64) []string {
		var out []string
		for i := from; i < end; i++ {
			out = append(out, fmt.Sprintf("v%02d", i))
		}
		return out
	}

	cl := kclient(t, addr, namedCommits())
	fetch := func(off int64) kmsg.FetchResponseTopicPartition {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis, req.MaxBytes = 1, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = "t"
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition, fp.FetchOffset, fp.PartitionMaxBytes, fp.LogStartOffset, fp.CurrentLeaderEpoch = 0, off, 1<<20, -1, -1
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, cl)
		require.NoError(t, err)
		return resp.Topics[0].Partitions[0]
	}
	at := fetch(low)
	require.Equal(t, int16(0), at.ErrorCode)
	assert.Equal(t, low, at.LogStartOffset)
	var got []string
	var offsets []int64
	for _, r := range recordsOf(t, at.RecordBatches) {
		got, offsets = append(got, r.value), append(offsets, r.offset)
	}
	assert.Equal(t, wantFrom(low), got)
	require.NotEmpty(t, offsets)
	assert.Equal(t, low, offsets[0], "the first record is the log start's")
	below := fetch(low - 1)
	assert.Equal(t, kerr.OffsetOutOfRange.Code, below.ErrorCode)
	assert.Empty(t, below.RecordBatches)

	for name, off := range map[string]kgo.Offset{"at the log start": kgo.NewOffset().At(low), "reset to the start": kgo.NewOffset().AtStart()} {
		c := kclient(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"t": {0: off}}))
		recs := pollN(ctx, t, c, int(end-low))
		var vals []string
		for _, r := range recs {
			vals = append(vals, string(r.Value))
		}
		assert.Equal(t, wantFrom(low), vals, name)
	}

	resp, err := oc.RequestWith(ctx, cl)
	require.NoError(t, err)
	assert.Equal(t, int16(0), resp.Topics[0].Partitions[0].ErrorCode, "a commit below the log start is taken, as by Kafka")
	g := kclient(t, addr, kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	recs := pollN(ctx, t, g, int(end-low))
	var vals []string
	for _, r := range recs {
		vals = append(vals, string(r.Value))
	}
	assert.Equal(t, wantFrom(low), vals, "the group resumes at the log start")
}

// fetchedRecord is a record of a fetch answer: its offset and value.
type fetchedRecord struct {
	offset int64
	value  string
}

// recordsOf decodes the records of a fetch answer's (uncompressed)
// record batches.
func recordsOf(t *testing.T, raw []byte) []fetchedRecord {
	t.Helper()
	var out []fetchedRecord
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		require.NoError(t, b.ReadFrom(raw))
		require.Zero(t, b.Attributes&7, "uncompressed")
		recs := b.Records
		for range b.NumRecords {
			l, k := binary.Varint(recs)
			require.Positive(t, k)
			var r kmsg.Record
			require.NoError(t, r.ReadFrom(recs[:k+int(l)]))
			out = append(out, fetchedRecord{b.FirstOffset + int64(r.OffsetDelta), string(r.Value)})
			recs = recs[k+int(l):]
		}
		raw = raw[int(b.Length)+12:]
	}
	return out
}

// TestOffsetCommit_DeletedTopic: once a topic is deleted, through the
// listener or the engine, a group's commit to it is refused
// UNKNOWN_TOPIC_OR_PARTITION and stores nothing, the group's offsets no
// longer list it, and a topic made again under its name starts with no
// committed offset (the deleted topic's is not resurrected).
func TestOffsetCommit_DeletedTopic(t *testing.T) {
	for _, through := range []string{"listener", "engine"} {
		t.Run(through, func(t *testing.T) {
			e, addr := setup(t, map[string]int{"t": 2, "other": 1})
			ctx := testCtx(t)
			for q := range 2 {
				_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{Body: []byte("a")}, {Body: []byte("b")}}})
				require.NoError(t, err)
			}
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "other", Messages: []*equeue.Message{{Body: []byte("a")}}})
			require.NoError(t, err)
			adm := kadm.NewClient(kclient(t, addr, namedCommits()))
			commit := func() kadm.OffsetResponses {
				t.Helper()
				var os kadm.Offsets
				os.AddOffset("t", 0, 2, -1)
				os.AddOffset("t", 1, 1, -1)
				os.AddOffset("other", 0, 1, -1)
				resp, err := adm.CommitOffsets(ctx, "g", os)
				require.NoError(t, err)
				return resp
			}
			first := commit()
			require.NoError(t, first.Error())

			if through == "listener" {
				deleted, err := adm.DeleteTopics(ctx, "t")
				require.NoError(t, err)
				require.NoError(t, deleted.Error())
			} else {
				require.NoError(t, e.DeleteTopic(ctx, "t"))
			}
			again := commit()
			for q := range int32(2) {
				r, ok := again.Lookup("t", q)
				require.True(t, ok, "partition %d answered", q)
				assert.ErrorIs(t, r.Err, kerr.UnknownTopicOrPartition, "partition %d", q)
			}
			o, ok := again.Lookup("other", 0)
			require.True(t, ok)
			assert.NoError(t, o.Err, "the other topic's commit is taken")
			stored, err := e.GroupOffsets(ctx, "g")
			require.NoError(t, err)
			assert.Equal(t, map[equeue.QueueRef]int64{{Topic: "other", Queue: 0}: 1}, stored)

			fetched, err := adm.FetchOffsets(ctx, "g")
			require.NoError(t, err)
			require.NoError(t, fetched.Error())
			_, listed := fetched.Lookup("t", 0)
			assert.False(t, listed, "the deleted topic's offsets are gone")

			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			fetched, err = adm.FetchOffsetsForTopics(ctx, "g", "t")
			require.NoError(t, err)
			for q := range int32(2) {
				r, ok := fetched.Lookup("t", q)
				require.True(t, ok, "partition %d", q)
				require.NoError(t, r.Err)
				assert.Equal(t, int64(-1), r.At, "partition %d of the new topic: nothing committed", q)
			}
		})
	}
}
