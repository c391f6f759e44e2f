package kafka_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
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

// TestKgo_RecordShapesRoundTripCompressed: records with null and empty
// keys and values and with headers go through each codec and come back to
// a franz-go consumer as Kafka gives them: a null key null, an empty key
// empty, a null value empty (README), headers by name.
func TestKgo_RecordShapesRoundTripCompressed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{
		{"gzip", kgo.GzipCompression()}, {"snappy", kgo.SnappyCompression()},
		{"lz4", kgo.Lz4Compression()}, {"zstd", kgo.ZstdCompression()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, addr := setup(t, map[string]int{"t": 1})
			ctx := testCtx(t)
			p := kclient(t, addr, kgo.DefaultProduceTopic("t"), kgo.ProducerBatchCompression(tc.codec), kgo.ProducerLinger(time.Second))
			sent := []*kgo.Record{
				{Key: nil, Value: []byte("null key")},
				{Key: []byte{}, Value: []byte("empty key")},
				{Key: []byte("k"), Value: nil},
				{Key: []byte("k2"), Value: []byte{}},
				{Key: []byte("h"), Value: bytes.Repeat([]byte("x"), 3000), Headers: []kgo.RecordHeader{{Key: "a", Value: []byte("1")}, {Key: "b", Value: []byte{}}}},
			}
			require.NoError(t, p.ProduceSync(ctx, sent...).FirstErr())
			for i, r := range sent {
				assert.Equal(t, int64(i), r.Offset, "the records are acknowledged at their offsets in one batch")
			}
			c := kclient(t, addr, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			got := pollN(ctx, t, c, len(sent))
			require.Len(t, got, len(sent))
			assert.Nil(t, got[0].Key, "a null key comes back null")
			assert.NotNil(t, got[1].Key, "an empty key comes back empty, not null")
			assert.Empty(t, got[1].Key)
			assert.Equal(t, "k", string(got[2].Key))
			assert.Empty(t, got[2].Value)
			assert.Empty(t, got[3].Value)
			assert.Equal(t, sent[4].Value, got[4].Value)
			hs := map[string]string{}
			for _, h := range got[4].Headers {
				hs[h.Key] = string(h.Value)
			}
			assert.Equal(t, map[string]string{"a": "1", "b": ""}, hs)
		})
	}
}

// TestFetch_MaxBytesBelowOneRecord: a fetch whose byte bounds (request and
// partition) are smaller than one record gets the first record of its
// first partition with data anyway (KIP-74), and a franz-go consumer with
// such bounds reads every record, in order.
func TestFetch_MaxBytesBelowOneRecord(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 2})
	ctx := testCtx(t)
	p := kclient(t, addr, kgo.DefaultProduceTopic("t"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	big := bytes.Repeat([]byte("y"), 4000)
	for i := range 6 {
		require.NoError(t, p.ProduceSync(ctx, &kgo.Record{Partition: int32(i % 2), Value: append(fmt.Appendf(nil, "%d:", i), big...)}).FirstErr())
	}

	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 10
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "t"
	for part := range int32(2) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes = part, 0, 10
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, p)
	require.NoError(t, err)
	require.Len(t, resp.Topics, 1)
	require.Len(t, resp.Topics[0].Partitions, 2)
	first := resp.Topics[0].Partitions[0]
	require.Equal(t, int16(0), first.ErrorCode)
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: "t", Partition: 0, KeepControlRecords: true}, &first, kgo.DefaultDecompressor(), nil)
	require.NoError(t, fp.Err)
	require.Len(t, fp.Records, 1, "the first record goes out above the bounds, alone")
	assert.Equal(t, "0:", string(fp.Records[0].Value[:2]))
	second := resp.Topics[0].Partitions[1]
	assert.Equal(t, int16(0), second.ErrorCode)
	assert.Empty(t, second.RecordBatches, "the second partition's record waits for a later fetch")
	assert.Equal(t, int64(3), second.HighWatermark)

	c := kclient(t, addr, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(10), kgo.FetchMaxPartitionBytes(10))
	got := pollN(ctx, t, c, 6)
	byPart := map[int32][]int64{}
	for _, r := range got {
		byPart[r.Partition] = append(byPart[r.Partition], r.Offset)
		assert.Len(t, r.Value, len(big)+2)
	}
	assert.Equal(t, map[int32][]int64{0: {0, 1, 2}, 1: {0, 1, 2}}, byPart)
}

// restartable serves an engine on a directory at one address, and can
// close both and open them again on the same directory and address, as a
// process restart does.
type restartable struct {
	t    *testing.T
	dir  string
	addr string
	opts *kafka.Options // the listener's, nil for the defaults
	mu   sync.Mutex
	e    *equeue.Engine
	s    *kafka.Server
	done chan error
}

func (r *restartable) start() {
	r.t.Helper()
	e, err := equeue.Open(r.dir, nil)
	require.NoError(r.t, err)
	s, err := kafka.NewServer(e, r.opts)
	require.NoError(r.t, err)
	addr := r.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lis net.Listener
	for range 100 { // the port may take a moment to be free again
		if lis, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.NoError(r.t, err)
	r.addr = lis.Addr().String()
	done := make(chan error, 1)
	go func() { done <- s.Serve(lis) }()
	r.mu.Lock()
	r.e, r.s, r.done = e, s, done
	r.mu.Unlock()
}

func (r *restartable) stop() {
	r.t.Helper()
	r.mu.Lock()
	e, s, done := r.e, r.s, r.done
	r.e = nil
	r.mu.Unlock()
	if e == nil {
		return
	}
	require.NoError(r.t, s.Close())
	require.ErrorIs(r.t, <-done, kafka.ErrServerClosed)
	require.NoError(r.t, e.Close())
}

func (r *restartable) engine() *equeue.Engine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.e
}

// TestKgo_IdempotentProducerAcrossRestartsWithDedupWindow: franz-go's
// idempotent producer sends while the engine and listener stop and start
// again on the same directory and address, twice. With the topic's dedup
// window (README, Limits), every record acknowledged is stored, and none
// is stored twice, though the listener forgot the producer's sequences.
func TestKgo_IdempotentProducerAcrossRestartsWithDedupWindow(t *testing.T) {
	ctx := testCtx(t)
	r := &restartable{t: t, dir: t.TempDir()}
	r.start()
	t.Cleanup(r.stop)
	require.NoError(t, r.engine().CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 2, DedupWindow: time.Hour}))

	p := kclient(t, r.addr, kgo.DefaultProduceTopic("t"), kgo.ProducerLinger(2*time.Millisecond),
		kgo.RecordRetries(1_000_000), kgo.RecordDeliveryTimeout(40*time.Second), kgo.RetryBackoffFn(func(int) time.Duration { return 20 * time.Millisecond }))
	const total = 3000
	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		fails []error
		wg    sync.WaitGroup
	)
	sendRange := func(from, to int) {
		for i := from; i < to; i++ {
			wg.Add(1)
			p.Produce(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k%d", i%7), Value: fmt.Appendf(nil, "v%05d", i)}, func(rec *kgo.Record, err error) {
				defer wg.Done()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fails = append(fails, err)
					return
				}
				acked[string(rec.Value)] = true
			})
		}
	}
	ackedCount := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	waitAcked := func(n int) {
		for ackedCount() < n {
			require.NoError(t, ctx.Err(), "acknowledged %d of %d", ackedCount(), n)
			time.Sleep(5 * time.Millisecond)
		}
	}
	sendRange(0, 1000)
	waitAcked(200)
	r.stop() // records in flight
	sendRange(1000, 2000)
	r.start()
	waitAcked(1200)
	r.stop()
	r.start()
	sendRange(2000, total)
	wg.Wait()
	require.Empty(t, fails)
	require.Len(t, acked, total)

	count := map[string]int{}
	e := r.engine()
	for q := range 2 {
		for off := int64(0); ; {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: q, Offset: off, Max: 1000})
			require.NoError(t, err)
			for _, m := range res.Messages {
				count[string(m.Body)]++
			}
			if res.NextOffset >= res.MaxOffset || len(res.Messages) == 0 {
				break
			}
			off = res.NextOffset
		}
	}
	for v := range acked {
		assert.Equal(t, 1, count[v], "record %s stored %d times", v, count[v])
	}
	assert.Len(t, count, total)
}

// TestKgo_GroupChurnCommitsNeverMoveBack: members of a franz-go group
// (eager and cooperative-sticky balancers) join, leave and vanish (a
// static member's close, which sends no LeaveGroup) while records
// are produced; every record is consumed at least once by the members
// together, no partition is given to a member while another holds it (as
// the members' callbacks tell), and the offsets the group commits never
// move back.
func TestKgo_GroupChurnCommitsNeverMoveBack(t *testing.T) {
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"eager", kgo.RangeBalancer()}, {"cooperative", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, addr := setup(t, map[string]int{"t": 4})
			ctx := testCtx(t)
			const total = 2000
			var (
				mu   sync.Mutex
				seen = map[string]bool{}
			)
			// member starts a member polling in the background; the
			// function it returns stops the polling and closes the
			// client, which commits what was polled and leaves.
			// owner is which member holds each partition, as the
			// members' callbacks tell: a partition given to a member
			// while another holds it is an overlap.
			owner := map[int32]int{}
			var overlaps []string
			nmembers := 0
			member := func(extra ...kgo.Opt) func() {
				mu.Lock()
				nmembers++
				id := nmembers
				mu.Unlock()
				drop := func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
					mu.Lock()
					defer mu.Unlock()
					for _, p := range ps["t"] {
						if owner[p] == id {
							delete(owner, p)
						}
					}
				}
				c, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MetadataMinAge(50 * time.Millisecond),
					kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.Balancers(tc.balancer),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(100 * time.Millisecond),
					kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(200 * time.Millisecond),
					kgo.OnPartitionsRevoked(func(ctx context.Context, c *kgo.Client, ps map[string][]int32) {
						// What franz-go's own callback does with autocommit
						// on: commit what was polled before letting go.
						if err := c.CommitUncommittedOffsets(ctx); err != nil {
							t.Logf("member %d: commit on revoke: %v", id, err)
						}
						drop(ctx, c, ps)
					}), kgo.OnPartitionsLost(drop),
					kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) {
						mu.Lock()
						defer mu.Unlock()
						for _, p := range ps["t"] {
							if o, ok := owner[p]; ok && o != id {
								overlaps = append(overlaps, fmt.Sprintf("partition %d given to member %d while member %d holds it", p, id, o))
							}
							owner[p] = id
						}
					})}, extra...)...)
				require.NoError(t, err)
				cctx, cancel := context.WithCancel(ctx)
				polled := make(chan struct{})
				go func() {
					defer close(polled)
					for cctx.Err() == nil {
						fs := c.PollRecords(cctx, 100)
						mu.Lock()
						for _, r := range fs.Records() {
							seen[string(r.Value)] = true
						}
						mu.Unlock()
					}
				}()
				var once sync.Once
				stop := func() {
					once.Do(func() {
						cancel()
						<-polled
						c.Close()
					})
				}
				t.Cleanup(stop)
				return stop
			}
			// Watch the committed offsets: none may move back.
			stopWatch := make(chan struct{})
			watched := make(chan []string, 1)
			go func() {
				last := map[int]int64{}
				var back []string
				defer func() { watched <- back }()
				for {
					select {
					case <-stopWatch:
						return
					case <-time.After(10 * time.Millisecond):
					}
					offs, err := e.GroupOffsets(context.Background(), "g")
					if err != nil {
						continue
					}
					for ref, o := range offs {
						if o < last[ref.Queue] {
							back = append(back, fmt.Sprintf("queue %d: %d after %d", ref.Queue, o, last[ref.Queue]))
						}
						last[ref.Queue] = max(last[ref.Queue], o)
					}
				}
			}()

			p := kclient(t, addr, kgo.DefaultProduceTopic("t"))
			produce := func(from, to int) {
				for i := from; i < to; i++ {
					p.Produce(ctx, &kgo.Record{Value: fmt.Appendf(nil, "v%05d", i)}, nil)
				}
				require.NoError(t, p.Flush(ctx))
			}
			m1 := member()
			produce(0, 400)
			m2 := member()
			produce(400, 800)
			m3 := member()
			produce(800, 1200)
			m1() // leaves, committing what it polled
			produce(1200, 1600)
			m2()
			// A static member's close sends no LeaveGroup: the group
			// holds its partitions until its session runs out, as
			// for a member killed.
			m5 := member(kgo.InstanceID("static"))
			produce(1600, 1700)
			m5()
			m4 := member()
			produce(1700, total)
			for {
				mu.Lock()
				n := len(seen)
				mu.Unlock()
				if n == total {
					break
				}
				require.NoError(t, ctx.Err(), "consumed %d of %d", n, total)
				time.Sleep(10 * time.Millisecond)
			}
			m3()
			m4()
			close(stopWatch)
			assert.Empty(t, <-watched, "committed offsets moved back")
			mu.Lock()
			assert.Empty(t, overlaps, "no two members hold a partition at once")
			mu.Unlock()
			offs, err := e.GroupOffsets(ctx, "g")
			require.NoError(t, err)
			var committed int64
			for _, o := range offs {
				committed += o
			}
			assert.Equal(t, int64(total), committed, "the members committed everything on leaving")
		})
	}
}

// TestProduce_IdempotentStateRebuiltAfterRestart: the listener restarts
// (the engine on disk) and forgets its producers' sequences; what a
// producer stored before is read back from the partition, as Kafka
// rebuilds its producer state from its log: a batch sent ahead of one not
// stored is refused OUT_OF_ORDER_SEQUENCE_NUMBER rather than taken (which
// got the earlier batch refused instead, and franz-go then sent its
// records again under a new epoch, storing some twice), and a retry of a
// batch stored before the restart is acknowledged where it is, not stored
// again, without a dedup window.
func TestProduce_IdempotentStateRebuiltAfterRestart(t *testing.T) {
	ctx := testCtx(t)
	r := &restartable{t: t, dir: t.TempDir()}
	r.start()
	t.Cleanup(r.stop)
	require.NoError(t, r.engine().CreateTopic(ctx, "t", 1))
	cl := kclient(t, r.addr)
	init, err := kmsg.NewPtrInitProducerIDRequest().RequestWith(ctx, cl)
	require.NoError(t, err)
	require.Equal(t, int16(0), init.ErrorCode)
	pid, epoch := init.ProducerID, init.ProducerEpoch
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 0, "a", "b")).ErrorCode)
	second := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c", "d"))
	require.Equal(t, int16(0), second.ErrorCode)
	require.Equal(t, int64(2), second.BaseOffset)
	cl.Close()

	r.stop()
	r.start()
	cl = kclient(t, r.addr)
	ahead := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 6, "g"))
	assert.Equal(t, int16(45), ahead.ErrorCode, "OUT_OF_ORDER_SEQUENCE_NUMBER: sequences 4 and 5 are not stored")
	retry := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 2, "c", "d"))
	assert.Equal(t, int16(0), retry.ErrorCode, "a retry of a batch stored before the restart is acknowledged")
	assert.Equal(t, int64(2), retry.BaseOffset, "where it was stored")
	next := produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 4, "e", "f"))
	require.Equal(t, int16(0), next.ErrorCode)
	assert.Equal(t, int64(4), next.BaseOffset)
	require.Equal(t, int16(0), produceRaw(ctx, t, cl, "t", 0, rawBatch(pid, epoch, 6, "g")).ErrorCode)

	res, err := r.engine().Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 100})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	assert.Equal(t, []string{"a", "b", "c", "d", "e", "f", "g"}, bodies)
}
