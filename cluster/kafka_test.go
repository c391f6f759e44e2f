package cluster_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/kafka"
)

// The Kafka listener learns the leader from the node.
var _ kafka.ClusterNode = (*cluster.Node)(nil)

// Kafka clients given only followers' addresses find the leader through
// them, and after the leader stops, follow the next leader: a producer's
// records are all stored, and a consumer group reads them all, across the
// failover.
func TestCluster_KafkaClientsFollowTheLeader(t *testing.T) {
	t.Run("classic", func(t *testing.T) { testKafkaFollowsTheLeader(t, false) })
	t.Run("kip848", func(t *testing.T) { testKafkaFollowsTheLeader(t, true) })
}

func testKafkaFollowsTheLeader(t *testing.T, serverSide bool) {
	const nodes = 3
	kc := newKafkaCluster(t, nodes, kafka.Options{ConsumerHeartbeatInterval: 200 * time.Millisecond})
	c, kaddr := kc.testCluster, kc.addr
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	c.createTopic(t, "orders", 2)
	li := c.leaderIndex()
	f1, f2 := (li+1)%nodes, (li+2)%nodes
	for _, f := range []int{f1, f2} {
		eventually(t, 20*time.Second, func() error {
			id, addr, self := c.nodes[f].KafkaLeader()
			if id != c.id(li) || addr != kaddr[c.id(li)] || self {
				return fmt.Errorf("%s knows leader %q at %q (self %v)", c.id(f), id, addr, self)
			}
			return nil
		})
	}

	opts := []kgo.Opt{kgo.MetadataMinAge(50 * time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond })}
	prod, err := kgo.NewClient(append(opts, kgo.SeedBrokers(kaddr[c.id(f1)]), kgo.DefaultProduceTopic("orders"),
		kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.RecordDeliveryTimeout(time.Minute))...)
	require.NoError(t, err)
	defer prod.Close()
	copts := append(opts, kgo.SeedBrokers(kaddr[c.id(f2)]), kgo.ConsumerGroup("g"), kgo.ConsumeTopics("orders"),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond))
	if serverSide {
		copts = append(copts, kgo.ServerSideBalancer())
	}
	cons, err := kgo.NewClient(copts...)
	require.NoError(t, err)
	defer cons.Close()

	produce := func(prefix string) []string {
		var want []string
		for i := range 20 {
			v := fmt.Sprintf("%s%d", prefix, i)
			want = append(want, v)
			require.NoError(t, prod.ProduceSync(ctx, &kgo.Record{Value: []byte(v)}).FirstErr(), "produce %s", v)
		}
		return want
	}
	seen := map[string]bool{}
	consume := func(want []string, failedOver bool) {
		for {
			missing := 0
			for _, v := range want {
				if !seen[v] {
					missing++
				}
			}
			if missing == 0 {
				break
			}
			fs := cons.PollFetches(ctx)
			require.NoError(t, ctx.Err(), "%d records of %v not consumed", missing, want)
			fs.EachError(func(topic string, p int32, err error) {
				if !errors.Is(err, context.Canceled) {
					t.Logf("fetch %s/%d: %v", topic, p, err)
				}
			})
			for _, r := range fs.Records() {
				seen[string(r.Value)] = true
			}
		}
		err := cons.CommitUncommittedOffsets(ctx)
		if failedOver && err != nil {
			// The new leader's listener coordinates the group afresh: a
			// member that read under its old membership is unknown there
			// until it rejoins, and what it read is delivered again.
			t.Logf("commit after the failover: %v", err)
			return
		}
		require.NoError(t, err)
	}

	first := produce("a")
	consume(first, false)
	ti, err := c.nodes[li].Topic(ctx, "orders")
	require.NoError(t, err)
	assert.Equal(t, int64(20), ti.Queues[0].MaxOffset+ti.Queues[1].MaxOffset, "each record stored once")

	kc.stopServer(li)
	c.stop(li)
	next := c.leaderIndex()
	require.NotEqual(t, li, next)

	second := produce("b")
	consume(second, true)
	ti, err = c.nodes[next].Topic(ctx, "orders")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, ti.Queues[0].MaxOffset+ti.Queues[1].MaxOffset, int64(40), "the records of both leaders are stored")
}

// A follower that restarts still knows where the leader's Kafka listener
// is: the address is kept in the node's stored state with the tenure, not
// only in the log entry it applied before.
func TestCluster_RestartedFollowerKnowsTheLeadersKafkaAddress(t *testing.T) {
	c := newCluster(t, 3, func(o *cluster.Options) { o.KafkaAddr = "kafka-" + o.ID + ":9092" })
	li := c.leaderIndex()
	f := (li + 1) % 3
	want := "kafka-" + c.id(li) + ":9092"
	check := func() error {
		id, addr, self := c.nodes[f].KafkaLeader()
		if id != c.id(li) || addr != want || self {
			return fmt.Errorf("%s knows leader %q at %q (self %v)", c.id(f), id, addr, self)
		}
		return nil
	}
	eventually(t, 20*time.Second, check)
	id, addr, self := c.nodes[li].KafkaLeader()
	assert.Equal(t, []any{c.id(li), want, true}, []any{id, addr, self}, "the leader names itself")

	c.stop(f)
	c.start(f, false)
	eventually(t, 20*time.Second, check)
}

// A follower's Kafka listener lists the topics its store holds, led by
// the leader and with the topic IDs the leader's gives, so that a Kafka
// client learns them from any node.
func TestCluster_FollowerListsTheTopicsForKafka(t *testing.T) {
	const nodes = 2
	kc := newKafkaCluster(t, nodes, kafka.Options{})
	c, kaddr := kc.testCluster, kc.addr
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.createTopic(t, "orders", 3) // once the leader holds the lease of the two voters
	li := c.leaderIndex()
	f := (li + 1) % nodes

	metadata := func(i int) *kmsg.MetadataResponse {
		cl, err := kgo.NewClient(kgo.SeedBrokers(kaddr[c.id(i)]))
		require.NoError(t, err)
		defer cl.Close()
		resp, err := cl.SeedBrokers()[0].Request(ctx, kmsg.NewPtrMetadataRequest())
		require.NoError(t, err)
		return resp.(*kmsg.MetadataResponse)
	}
	lead := metadata(li)
	require.Len(t, lead.Topics, 1)
	require.Len(t, lead.Brokers, 1)
	eventually(t, 20*time.Second, func() error {
		fm := metadata(f)
		if len(fm.Topics) != 1 {
			return fmt.Errorf("the follower lists %d topics", len(fm.Topics))
		}
		assert.Equal(t, lead.Brokers, fm.Brokers, "the follower names the leader")
		assert.Equal(t, "orders", *fm.Topics[0].Topic)
		assert.Equal(t, lead.Topics[0].TopicID, fm.Topics[0].TopicID)
		require.Len(t, fm.Topics[0].Partitions, 3)
		for _, p := range fm.Topics[0].Partitions {
			assert.Equal(t, lead.Brokers[0].NodeID, p.Leader)
		}
		return nil
	})

	// By topic ID (Metadata v12): the follower describes the topic its
	// store holds with that ID, and answers an ID it holds no topic of
	// with LEADER_NOT_AVAILABLE, as a name, so clients ask the leader.
	cl, err := kgo.NewClient(kgo.SeedBrokers(kaddr[c.id(f)]))
	require.NoError(t, err)
	defer cl.Close()
	byID := kmsg.NewPtrMetadataRequest()
	for _, id := range [][16]byte{lead.Topics[0].TopicID, {1, 2, 3}} {
		mt := kmsg.NewMetadataRequestTopic()
		mt.TopicID = id
		byID.Topics = append(byID.Topics, mt)
	}
	resp, err := cl.SeedBrokers()[0].Request(ctx, byID)
	require.NoError(t, err)
	fm := resp.(*kmsg.MetadataResponse)
	require.Equal(t, int16(12), fm.GetVersion())
	require.Len(t, fm.Topics, 2)
	assert.Equal(t, kmsg.StringPtr("orders"), fm.Topics[0].Topic)
	assert.Equal(t, lead.Topics[0].TopicID, fm.Topics[0].TopicID)
	assert.Len(t, fm.Topics[0].Partitions, 3)
	assert.Equal(t, [16]byte{1, 2, 3}, fm.Topics[1].TopicID)
	assert.Equal(t, kerr.LeaderNotAvailable.Code, fm.Topics[1].ErrorCode)
}

// kafkaCluster is a test cluster whose every node serves Kafka on a
// listener of its own, its address the node's Options.KafkaAddr.
type kafkaCluster struct {
	*testCluster
	addr    map[string]string // node ID -> Kafka address
	servers []*kafka.Server
	done    []chan error
}

// newKafkaCluster starts n nodes and their listeners (opts, with each
// node's AdvertisedAddr). The listeners close before the nodes.
func newKafkaCluster(t *testing.T, n int, opts kafka.Options) *kafkaCluster {
	t.Helper()
	kc := &kafkaCluster{addr: map[string]string{}, servers: make([]*kafka.Server, n), done: make([]chan error, n)}
	lis := make([]net.Listener, n)
	for i := range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		lis[i] = l
		kc.addr[fmt.Sprintf("n%d", i+1)] = l.Addr().String()
	}
	kc.testCluster = newCluster(t, n, func(o *cluster.Options) { o.KafkaAddr = kc.addr[o.ID] })
	for i := range n {
		o := opts
		o.AdvertisedAddr = kc.addr[kc.id(i)]
		s, err := kafka.NewServer(kc.nodes[i], &o)
		require.NoError(t, err)
		kc.servers[i], kc.done[i] = s, make(chan error, 1)
		go func() { kc.done[i] <- s.Serve(lis[i]) }()
	}
	t.Cleanup(func() { // before the nodes close (cleanups run last first)
		for i := range n {
			kc.stopServer(i)
		}
	})
	return kc
}

// stopServer closes node i's listener (once).
func (kc *kafkaCluster) stopServer(i int) {
	if kc.servers[i] == nil {
		return
	}
	require.NoError(kc.t, kc.servers[i].Close())
	require.ErrorIs(kc.t, <-kc.done[i], kafka.ErrServerClosed)
	kc.servers[i] = nil
}

// An idempotent Kafka producer's batch sent again after a failover (its
// answer was lost with the old leader) is stored once on a topic with a
// dedup window: the new leader's listener does not know the producer's
// sequence, but the replicated window knows the batch's message IDs.
// Without a window it is stored once too: the new leader's listener reads
// the partition's last records back for a producer it did not hand its
// ID out to, a first batch (sequence 0) too, and finds the batch there.
// Before, a batch of sequence 0 was taken as it came, and stored twice.
func TestCluster_KafkaRetryAcrossAFailoverWithDedup(t *testing.T) {
	kc := newKafkaCluster(t, 3, kafka.Options{})
	c := kc.testCluster
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c.createTopicWith(t, "once", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour})
	c.createTopic(t, "plain", 1)
	li := c.leaderIndex()

	// One producer ID, epoch and first sequence, as a client's retry keeps.
	batch := producerBatch(t, 77, 0, 0, "r0", "r1", "r2")
	produce := func(i int, topic string) int64 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(kc.addr[c.id(i)]), kgo.RequestRetries(0))
		require.NoError(t, err)
		defer cl.Close()
		pr := kmsg.NewPtrProduceRequest()
		pr.Acks, pr.TimeoutMillis = -1, 10000
		pt := kmsg.NewProduceRequestTopic()
		pt.Topic = topic
		pp := kmsg.NewProduceRequestTopicPartition()
		pp.Records = batch
		pt.Partitions = append(pt.Partitions, pp)
		pr.Topics = append(pr.Topics, pt)
		resp, err := cl.SeedBrokers()[0].Request(ctx, pr)
		require.NoError(t, err)
		p := resp.(*kmsg.ProduceResponse).Topics[0].Partitions[0]
		require.Equal(t, int16(0), p.ErrorCode, "produce to %s at %s", topic, c.id(i))
		return p.BaseOffset
	}
	assert.Equal(t, int64(0), produce(li, "once"))
	assert.Equal(t, int64(0), produce(li, "plain"))

	kc.stopServer(li)
	c.stop(li)
	next := c.leaderIndex()
	eventually(t, 20*time.Second, func() error { // the new leader's tenure is applied and its lease held
		_, err := c.nodes[next].Topic(ctx, "once")
		return err
	})
	assert.Equal(t, int64(0), produce(next, "once"), "acknowledged at the first copy's offset")
	assert.Equal(t, int64(0), produce(next, "plain"), "found in the partition without a window")
	for topic, want := range map[string]int64{"once": 3, "plain": 3} {
		ti, err := c.nodes[next].Topic(ctx, topic)
		require.NoError(t, err)
		assert.Equal(t, want, ti.Queues[0].MaxOffset, topic)
	}
}

// producerBatch encodes values as one v2 record batch of an idempotent
// producer (its ID, epoch and first sequence), with length and checksum.
func producerBatch(t *testing.T, pid int64, epoch int16, seq int32, values ...string) []byte {
	t.Helper()
	rb := kmsg.NewRecordBatch()
	rb.Magic, rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = 2, pid, epoch, seq
	rb.NumRecords, rb.LastOffsetDelta = int32(len(values)), int32(len(values)-1)
	for i, v := range values {
		rec := kmsg.NewRecord()
		rec.OffsetDelta, rec.Value = int32(i), []byte(v)
		rec.Length = int32(len(rec.AppendTo(nil)) - 1) // all but the varint of Length 0
		rb.Records = rec.AppendTo(rb.Records)
	}
	b := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(b[8:], uint32(len(b)-12))
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}
