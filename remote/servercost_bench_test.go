package remote_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
)

// BenchmarkServerCost measures what a server holds for each waiting
// long-poll and for each open AppendStream call: a child process opens
// EQUEUE_BENCH_HELD of them (default 8,192) over 64 connections, and the
// server, in this process, reports the heap and stack it holds and its
// goroutines, per call, against the same server with none. The calls are
// of a raw gRPC client, each a pull that waits on an empty queue or a
// stream that sends nothing, so the figures are the server's floor per
// call. Run it once:
//
//	go test -run '^$' -bench ServerCost -benchtime=1x ./remote
func BenchmarkServerCost(b *testing.B) {
	n := 8192
	if v := os.Getenv("EQUEUE_BENCH_HELD"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	for _, kind := range []string{"longpoll", "stream"} {
		b.Run(kind, func(b *testing.B) {
			ctx := context.Background()
			e := openEngine(b, &equeue.Options{MaxPullWait: time.Hour})
			require.NoError(b, e.CreateTopic(ctx, "t", 1))
			srv, err := remote.NewServer(e, &remote.ServerOptions{MaxLongPolls: n, MaxAppendStreams: n})
			require.NoError(b, err)
			s := serve(b, srv, "")
			held := remote.HeldLongPolls
			if kind == "stream" {
				held = remote.HeldAppendStreams
			}
			for range b.N {
				heap0, stack0, g0 := serverMemory()
				ch := startChild(b, "cost-holders", kind, "EQUEUE_MP_ADDR="+s.addr, "EQUEUE_MP_KIND="+kind, fmt.Sprintf("EQUEUE_MP_COUNT=%d", n))
				eventually(b, 5*time.Minute, func() bool { return held(srv) == int64(n) }, "the server holds %d of %d", func() any { return held(srv) }, n)
				heap1, stack1, g1 := serverMemory()
				b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-B/call")
				b.ReportMetric(float64(stack1-stack0)/float64(n), "stack-B/call")
				b.ReportMetric(float64(g1-g0)/float64(n), "goroutines/call")
				require.NoError(b, ch.cmd.Process.Signal(syscall.SIGKILL))
				_ = ch.cmd.Wait()
				eventually(b, 5*time.Minute, func() bool { return held(srv) == 0 }, "the server still holds %d", func() any { return held(srv) })
			}
		})
	}
}

// serverMemory is this process's heap and stack in use, after a GC, and
// its goroutines.
func serverMemory() (heap, stack int64, goroutines int) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse), int64(ms.StackInuse), runtime.NumGoroutine()
}

// runCostHolders is the child of BenchmarkServerCost: it opens
// EQUEUE_MP_COUNT calls of EQUEUE_MP_KIND ("longpoll": a pull that waits
// an hour on the empty queue 0 of "t"; "stream": an AppendStream call that
// sends nothing) over 64 connections, prints READY, and holds them until
// it is killed.
func runCostHolders(addr string, say func(string, ...any)) {
	n, _ := strconv.Atoi(os.Getenv("EQUEUE_MP_COUNT"))
	const conns = 64
	apis := make([]pb.BrokerClient, conns)
	for i := range apis {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			say("ERROR %v", err)
			os.Exit(3)
		}
		apis[i] = pb.NewBrokerClient(cc)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range n {
		api := apis[i%conns]
		switch os.Getenv("EQUEUE_MP_KIND") {
		case "longpoll":
			go func() {
				for {
					_, _ = api.Pull(ctx, &pb.PullRequest{Topic: "t", Wait: durationpb.New(time.Hour)})
				}
			}()
		case "stream":
			wg.Go(func() {
				st, err := api.AppendStream(ctx)
				if err == nil {
					_, err = st.Header()
				}
				if err != nil {
					say("ERROR %v", err)
					os.Exit(3)
				}
			})
		}
	}
	wg.Wait()
	say("READY")
	select {}
}
