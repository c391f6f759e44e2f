package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// BenchmarkClusterClientSendAsync measures a producer's SendAsync through
// a ClusterClient to a 3-node cluster (wal log store), b.N messages of 100
// bytes started at once: pipelined on the leader's append stream, and, in
// the same run, with the client's AppendAsync hidden, as a Broker without
// it gets them (one goroutine and one unary Append per message):
//
//	go test -run '^$' -bench BenchmarkClusterClientSendAsync -benchtime 5000x ./cluster/
func BenchmarkClusterClientSendAsync(b *testing.B) {
	b.Run("pipelined", func(b *testing.B) { benchClusterSendAsync(b, false) })
	b.Run("goroutine-per-send", func(b *testing.B) { benchClusterSendAsync(b, true) })
}

// withoutAppendAsync hides a broker's AppendAsync.
type withoutAppendAsync struct{ equeue.Broker }

func benchClusterSendAsync(b *testing.B, hide bool) {
	c, addrs, _ := countedCluster(b, nil)
	ctx := context.Background()
	cc, err := remote.DialCluster([]string{addrs[c.leaderIndex()]}, nil)
	require.NoError(b, err)
	defer cc.Close()
	require.NoError(b, cc.OnLeader(ctx, func(cl *remote.Client) error { return cl.CreateTopic(ctx, "bench", 4) }))
	var br equeue.Broker = cc
	if hide {
		br = withoutAppendAsync{cc}
	}
	p, err := equeue.NewProducer(br, nil)
	require.NoError(b, err)
	defer p.Close()
	body := make([]byte, benchBody)
	fs := make([]*equeue.SendFuture, b.N)
	b.ResetTimer()
	cpu0, cpuOK := benchProcessCPU()
	start := time.Now()
	for i := range fs {
		fs[i] = p.SendAsync(ctx, &equeue.Message{Topic: "bench", Body: body})
	}
	failed := 0
	for _, f := range fs {
		if _, err := f.Result(ctx); err != nil {
			failed++
		}
	}
	elapsed := time.Since(start)
	cpu1, cpuOK1 := benchProcessCPU()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(failed), "failed")
	if cpuOK && cpuOK1 {
		b.ReportMetric(float64(cpu1-cpu0)/float64(time.Microsecond)/float64(b.N), "cpu-µs/msg")
	}
}
