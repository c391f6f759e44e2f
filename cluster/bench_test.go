package cluster_test

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// Benchmarks compare a 3-node cluster (in one process, Raft over
// loopback TCP, every node on disk) with one engine under SyncAlways, in
// the same run:
//
//	go test -run '^$' -bench 'BenchmarkSend' -benchtime 20000x ./cluster/
//
// Each op is one message of 100 bytes; 64 goroutines send.
const (
	benchSenders = 64
	benchBody    = 100
)

func BenchmarkSend(b *testing.B) {
	b.Run("single-SyncAlways", func(b *testing.B) { benchSingle(b, 1) })
	b.Run("cluster3-bolt", func(b *testing.B) { benchCluster(b, 1, cluster.LogStoreBolt) })
	b.Run("cluster3-wal", func(b *testing.B) { benchCluster(b, 1, cluster.LogStoreWAL) })
}

func BenchmarkSendBatch(b *testing.B) {
	b.Run("single-SyncAlways", func(b *testing.B) { benchSingle(b, 32) })
	b.Run("cluster3-bolt", func(b *testing.B) { benchCluster(b, 32, cluster.LogStoreBolt) })
	b.Run("cluster3-wal", func(b *testing.B) { benchCluster(b, 32, cluster.LogStoreWAL) })
}

func benchSingle(b *testing.B, batch int) {
	dir := b.TempDir()
	e, err := equeue.Open(dir, &equeue.Options{Sync: equeue.SyncAlways})
	require.NoError(b, err)
	require.NoError(b, e.CreateTopic(context.Background(), "bench", 4))
	runSenders(b, e, batch)
	require.NoError(b, e.Close()) // sizes after close, as for the cluster
	b.ReportMetric(float64(dirSize(b, dir))/float64(b.N), "disk-B/msg")
}

func benchCluster(b *testing.B, batch int, logStore string) {
	c := newCluster(b, 3, func(o *cluster.Options) { o.LogStore = logStore })
	leader := c.waitLeader()
	require.NoError(b, leader.CreateTopic(context.Background(), "bench", 4))
	before := leader.Status().LastLogIndex
	runSenders(b, leader, batch)
	b.ReportMetric(float64(b.N)/float64(leader.Status().LastLogIndex-before), "msgs/entry")
	c.waitConverged()
	b.StopTimer()
	c.closeAll()
	var size int64
	for _, d := range c.dirs {
		size += dirSize(b, d)
	}
	b.ReportMetric(float64(size)/float64(b.N)/3, "disk-B/msg/node")
}

// runSenders sends b.N messages from benchSenders goroutines, batch per
// Append, and reports msgs/s and the process's CPU time per message
// (cpu-µs/msg: every node's, while the senders ran; less sensitive to
// other work on the machine than the rate).
func runSenders(b *testing.B, br equeue.Broker, batch int) {
	b.ResetTimer()
	stopProfile := benchProfile(b)
	elapsed, cpu, cpuOK := sendAll(b, br, b.N, batch)
	b.StopTimer()
	stopProfile()
	sent := (int64(b.N) + int64(batch) - 1) / int64(batch) * int64(batch)
	b.ReportMetric(float64(sent)/elapsed.Seconds(), "msgs/s")
	if cpuOK {
		b.ReportMetric(float64(cpu)/float64(time.Microsecond)/float64(sent), "cpu-µs/msg")
	}
}

// sendAll sends n messages (rounded up to whole batches) to br from
// benchSenders goroutines, batch per Append, and returns the time it
// took and the process's CPU time meanwhile (ok false: not known here).
func sendAll(b *testing.B, br equeue.Broker, n, batch int) (elapsed, cpu time.Duration, ok bool) {
	body := make([]byte, benchBody)
	var next atomic.Int64
	var wg sync.WaitGroup
	cpu0, ok0 := benchProcessCPU()
	start := time.Now()
	for s := range benchSenders {
		wg.Go(func() {
			for next.Add(int64(batch))-int64(batch) < int64(n) {
				msgs := make([]*equeue.Message, batch)
				for i := range msgs {
					msgs[i] = &equeue.Message{Body: body}
				}
				if _, err := br.Append(context.Background(), &equeue.AppendRequest{Topic: "bench", Queue: s % 4, Messages: msgs}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(start)
	cpu1, ok1 := benchProcessCPU()
	return elapsed, cpu1 - cpu0, ok0 && ok1
}

// benchProfile starts a CPU profile of the sending window alone (not the
// set-up and close of the nodes, which -cpuprofile would include) when
// EQUEUE_BENCH_PROFILE names a directory, and returns its stop:
//
//	EQUEUE_BENCH_PROFILE=/tmp/prof go test -run '^$' -bench 'BenchmarkSendBatch/cluster3-wal' -benchtime 20000x -count 5 ./cluster/
//	go tool pprof -top /tmp/prof/*.pprof
func benchProfile(b *testing.B) (stop func()) {
	dir := os.Getenv("EQUEUE_BENCH_PROFILE")
	if dir == "" {
		return func() {}
	}
	require.NoError(b, os.MkdirAll(dir, 0o755))
	f, err := os.CreateTemp(dir, strings.ReplaceAll(b.Name(), "/", "_")+"-*.pprof")
	require.NoError(b, err)
	require.NoError(b, pprof.StartCPUProfile(f))
	return func() {
		pprof.StopCPUProfile()
		require.NoError(b, f.Close())
	}
}

func dirSize(b *testing.B, dir string) int64 {
	var n int64
	require.NoError(b, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	}))
	return n
}

// BenchmarkFailover measures, over 10 SIGKILLs of the leader process of a
// 3-process cluster with Raft's default timeouts, the time from the kill
// to the first acknowledged send. It runs once whatever b.N:
//
//	go test -run '^$' -bench BenchmarkFailover -benchtime 1x ./cluster/
func BenchmarkFailover(b *testing.B) {
	j := startJepsen(b, 3, jepsenConfig{env: []string{childDefaults + "=1"}})
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				j.send(ctx, fmt.Sprintf("w%d-%d", w, i), (w+i)%4)
			}
		})
	}
	j.waitProgress(50)
	var times []time.Duration
	for range 10 {
		l := j.waitLeader(nil)
		killed := time.Now()
		require.NoError(b, l.cmd.Process.Kill())
		<-l.done
		l.cmd = nil
		j.waitProgress(1)
		times = append(times, time.Since(killed))
		j.launch(l)
		j.waitProgress(50)
	}
	stop()
	wg.Wait()
	slices.Sort(times)
	b.ReportMetric(times[len(times)/2].Seconds(), "failover-p50-s")
	b.ReportMetric(times[len(times)-1].Seconds(), "failover-max-s")
	b.Logf("failover times: %v", times)
}
