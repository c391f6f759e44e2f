package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestCluster_JepsenKafka runs the nemesis of TestCluster_Jepsen (SIGKILL,
// SIGSTOP and a cut-off leader, the nodes as OS processes) while Kafka
// clients work beside the gRPC ones: two idempotent franz-go producers
// that know every node's Kafka address, and two consumer groups, one of
// the classic protocol and one of KIP-848's. Besides the checks of the
// gRPC history, which now cover the Kafka producers' sends too (an
// acknowledged record is at its offset on every node, nothing is stored
// twice: the topic has a dedup window, so a batch retried across a
// failover is stored once), each Kafka group must receive every
// acknowledged message: at least once, across failovers of its
// coordinator. EQUEUE_CLUSTER_LONG=1 runs 30 rounds instead of 3.
func TestCluster_JepsenKafka(t *testing.T) {
	runJepsen(t, jepsenConfig{kafka: true})
}

// kafkaWorkload is the Kafka clients of a run: producers that append to
// the run's history (j.ops) and consumer groups that record what they
// received.
type kafkaWorkload struct {
	j *jepsen

	stopProduce, stopConsume context.CancelFunc
	producers, consumers     sync.WaitGroup
	acked                    atomic.Int64 // Kafka sends acknowledged
	saramaAcked              atomic.Int64 // of which by sarama

	mu     sync.Mutex
	seen   map[string]map[string]bool // group → values received
	polled map[string]map[int32]int64 // group → partition → highest offset received
}

// kafkaGroups are the run's Kafka consumer groups: the name, and whether
// it uses KIP-848's protocol (server-side assignment).
var kafkaGroups = []struct {
	name       string
	serverSide bool
}{{"kclassic", false}, {"k848", true}}

func (j *jepsen) kafkaSeeds() []string {
	var seeds []string
	for _, p := range j.procs {
		seeds = append(seeds, p.kafka)
	}
	return seeds
}

// startKafka starts the Kafka producers and consumer groups.
func (j *jepsen) startKafka() *kafkaWorkload {
	k := &kafkaWorkload{j: j, seen: map[string]map[string]bool{}, polled: map[string]map[int32]int64{}}
	common := []kgo.Opt{
		kgo.SeedBrokers(j.kafkaSeeds()...),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }),
	}
	pctx, stop := context.WithCancel(context.Background())
	k.stopProduce = stop
	for w := range 2 {
		cl, err := kgo.NewClient(append(common, kgo.DefaultProduceTopic("jepsen"),
			kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.RecordDeliveryTimeout(5*time.Second))...)
		require.NoError(j.t, err)
		k.producers.Go(func() {
			defer cl.Close()
			for i := 0; pctx.Err() == nil; i++ {
				k.send(pctx, cl, fmt.Sprintf("k%d-%d", w, i), int32((w+i)%4))
			}
		})
	}
	// A third producer, of another client library: sarama's idempotent
	// SyncProducer.
	sp := newSaramaProducer(j.t, j.kafkaSeeds())
	k.producers.Go(func() {
		defer func() { _ = sp.Close() }()
		for i := 0; pctx.Err() == nil; i++ {
			k.sendSarama(sp, fmt.Sprintf("s-%d", i), int32(i%4))
		}
	})
	cctx, stopC := context.WithCancel(context.Background())
	k.stopConsume = stopC
	for _, g := range kafkaGroups {
		opts := append(common, kgo.ConsumerGroup(g.name), kgo.ConsumeTopics("jepsen"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(500*time.Millisecond),
			kgo.AutoCommitInterval(300*time.Millisecond))
		if g.serverSide {
			opts = append(opts, kgo.ServerSideBalancer())
		}
		cl, err := kgo.NewClient(opts...)
		require.NoError(j.t, err)
		k.seen[g.name], k.polled[g.name] = map[string]bool{}, map[int32]int64{}
		k.consumers.Go(func() {
			defer cl.Close() // commits what was polled, and leaves
			for cctx.Err() == nil {
				fs := cl.PollFetches(cctx)
				k.mu.Lock()
				fs.EachRecord(func(r *kgo.Record) {
					k.seen[g.name][string(r.Value)] = true
					if off, ok := k.polled[g.name][r.Partition]; !ok || r.Offset > off {
						k.polled[g.name][r.Partition] = r.Offset
					}
				})
				k.mu.Unlock()
			}
		})
	}
	return k
}

// send produces one value to queue and records its outcome. A Kafka
// client cannot tell a refusal from an unknown outcome, so every failure
// counts as unknown.
func (k *kafkaWorkload) send(ctx context.Context, cl *kgo.Client, value string, queue int32) {
	j := k.j
	op := jepsenOp{value: value, queue: int(queue), invoke: j.now()}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	r := &kgo.Record{Value: []byte(value), Partition: queue}
	err := cl.ProduceSync(cctx, r).FirstErr()
	cancel()
	op.done = j.now()
	if err == nil {
		op.outcome, op.queue, op.offset = opOK, int(r.Partition), r.Offset
		k.acked.Add(1)
	} else {
		op.outcome, op.err = opUnknown, "kafka: "+err.Error()
		if ctx.Err() == nil {
			time.Sleep(20 * time.Millisecond) // no busy loop while no node answers
		}
	}
	j.mu.Lock()
	j.ops = append(j.ops, op)
	j.mu.Unlock()
}

// newSaramaProducer is an idempotent sarama producer that retries for
// about as long as a failover takes.
func newSaramaProducer(t testing.TB, seeds []string) sarama.SyncProducer {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V2_8_0_0
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Retry.Max, cfg.Producer.Retry.Backoff = 40, 100*time.Millisecond
	cfg.Metadata.Retry.Max, cfg.Metadata.Retry.Backoff = 40, 100*time.Millisecond
	p, err := sarama.NewSyncProducer(seeds, cfg)
	require.NoError(t, err)
	return p
}

// sendSarama produces one value with sarama and records its outcome.
func (k *kafkaWorkload) sendSarama(p sarama.SyncProducer, value string, queue int32) {
	j := k.j
	op := jepsenOp{value: value, queue: int(queue), invoke: j.now()}
	part, off, err := p.SendMessage(&sarama.ProducerMessage{Topic: "jepsen", Partition: queue, Value: sarama.StringEncoder(value)})
	op.done = j.now()
	if err == nil {
		op.outcome, op.queue, op.offset = opOK, int(part), off
		k.acked.Add(1)
		k.saramaAcked.Add(1)
	} else {
		op.outcome, op.err = opUnknown, "sarama: "+err.Error()
		time.Sleep(20 * time.Millisecond)
	}
	j.mu.Lock()
	j.ops = append(j.ops, op)
	j.mu.Unlock()
}

// waitProduced waits until the Kafka producers have had more sends
// acknowledged than now: they recovered from the nemesis.
func (k *kafkaWorkload) waitProduced(more int64) {
	want := k.acked.Load() + more
	eventually(k.j.t, 60*time.Second, func() error {
		if got := k.acked.Load(); got < want {
			return fmt.Errorf("%d of %d Kafka sends acknowledged", got, want)
		}
		return nil
	})
}

func (k *kafkaWorkload) stopProducers() {
	k.stopProduce()
	k.producers.Wait()
}

// groupsGetEverything waits until every Kafka group received every
// acknowledged send (gRPC and Kafka), then stops the consumers.
func (k *kafkaWorkload) groupsGetEverything() {
	t := k.j.t
	missing := map[string]int{}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		k.j.mu.Lock()
		k.mu.Lock()
		clear(missing)
		for _, op := range k.j.ops {
			for _, g := range kafkaGroups {
				if op.outcome == opOK && !k.seen[g.name][op.value] {
					missing[g.name]++
				}
			}
		}
		k.mu.Unlock()
		k.j.mu.Unlock()
		if len(missing) == 0 {
			break
		}
	}
	k.stopConsume()
	k.consumers.Wait()
	for _, g := range kafkaGroups {
		assert.Zero(t, missing[g.name], "acknowledged messages Kafka group %s did not receive", g.name)
	}
	t.Logf("Kafka: %d sends acknowledged (%d by sarama); groups received %d and %d values", k.acked.Load(),
		k.saramaAcked.Load(), len(k.seen[kafkaGroups[0].name]), len(k.seen[kafkaGroups[1].name]))
	k.checkCommitted()
	errs := map[string]int{}
	k.j.mu.Lock()
	for _, op := range k.j.ops {
		if op.outcome == opUnknown && strings.HasPrefix(op.err, "sarama: ") {
			errs[op.err]++
		}
	}
	k.j.mu.Unlock()
	t.Logf("sarama's failed sends: %v", errs)
}

// checkCommitted checks each Kafka group's committed offsets: never past
// the records it received (a member that restarted there would skip
// records nobody handled).
func (k *kafkaWorkload) checkCommitted() {
	t := k.j.t
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.j.kafkaSeeds()...))
	require.NoError(t, err)
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for _, g := range kafkaGroups {
		var offs kadm.OffsetResponses
		eventually(t, 30*time.Second, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			offs, err = adm.FetchOffsets(ctx, g.name)
			if err == nil {
				err = offs.Error()
			}
			return err
		})
		var got []string
		offs.Each(func(o kadm.OffsetResponse) {
			got = append(got, fmt.Sprintf("%d:%d", o.Partition, o.At))
			if high, ok := k.polled[g.name][o.Partition]; o.At >= 0 {
				assert.True(t, ok && o.At <= high+1, "group %s committed %d on partition %d, past the records it received (highest %d)", g.name, o.At, o.Partition, high)
			}
		})
		slices.Sort(got)
		t.Logf("Kafka group %s committed %v", g.name, got)
	}
}
