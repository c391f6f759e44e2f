package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// BenchmarkRatio measures issue 13's targets as BenchmarkSend and
// BenchmarkSendBatch do, but with a single node and a 3-node cluster open
// side by side and taking turns: 8 rounds each of b.N/8 messages,
// alternated. On a machine whose disk speed drifts from one second to the
// next, the ratio of two sub-benchmarks run one after the other measures
// the drift as much as the engines; rounds taken in turn share it.
//
//	go test -run '^$' -bench 'BenchmarkRatio' -benchtime 40000x ./cluster/
func BenchmarkRatio(b *testing.B) {
	for _, c := range []struct {
		name  string
		batch int
	}{{"Send", 1}, {"SendBatch", 32}} {
		for _, ls := range []string{cluster.LogStoreWAL, cluster.LogStoreBolt} {
			b.Run(c.name+"/"+ls, func(b *testing.B) { benchRatio(b, c.batch, ls) })
		}
	}
}

// ratioSide is one engine of BenchmarkRatio and what its rounds took.
type ratioSide struct {
	br   equeue.Broker
	took time.Duration
	cpu  time.Duration
	sent int
}

func benchRatio(b *testing.B, batch int, logStore string) {
	const rounds = 8
	ctx := context.Background()
	single, err := equeue.Open(b.TempDir(), &equeue.Options{Sync: equeue.SyncAlways})
	require.NoError(b, err)
	defer func() { require.NoError(b, single.Close()) }()
	require.NoError(b, single.CreateTopic(ctx, "bench", 4))
	c := newCluster(b, 3, func(o *cluster.Options) { o.LogStore = logStore })
	leader := c.waitLeader()
	require.NoError(b, leader.CreateTopic(ctx, "bench", 4))
	sides := []*ratioSide{{br: single}, {br: leader}}
	per := max(b.N/rounds, batch)
	before := leader.Status().LastLogIndex
	b.ResetTimer()
	for range rounds {
		for _, sd := range sides {
			sd.round(b, per, batch)
		}
	}
	b.StopTimer()
	entries := leader.Status().LastLogIndex - before
	rate := func(sd *ratioSide) float64 { return float64(sd.sent) / sd.took.Seconds() }
	b.ReportMetric(rate(sides[0]), "single-msgs/s")
	b.ReportMetric(rate(sides[1]), "cluster-msgs/s")
	b.ReportMetric(rate(sides[1])/rate(sides[0]), "ratio")
	if _, ok := benchProcessCPU(); ok {
		b.ReportMetric(float64(sides[0].cpu.Microseconds())/float64(sides[0].sent), "single-cpu-µs/msg")
		b.ReportMetric(float64(sides[1].cpu.Microseconds())/float64(sides[1].sent), "cluster-cpu-µs/msg")
	}
	b.ReportMetric(float64(sides[1].sent)/float64(entries), "msgs/entry")
}

// round sends n messages (rounded up to whole batches) and adds its wall
// and CPU time to sd.
func (sd *ratioSide) round(b *testing.B, n, batch int) {
	took, cpu, _ := sendAll(b, sd.br, n, batch)
	sd.took += took
	sd.cpu += cpu
	sd.sent += (n + batch - 1) / batch * batch
}
