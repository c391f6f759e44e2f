package remote_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// nemesisRounds is how many rounds the broker nemesis tests run:
// EQUEUE_NEMESIS_ROUNDS, 1 by default.
func nemesisRounds() int {
	if n, err := strconv.Atoi(os.Getenv("EQUEUE_NEMESIS_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 1
}

// sendersLoop runs senders, each sending one by one, in batches and in
// pipelines on short contexts, until stop is closed, and records every
// outcome in tl. Bodies are unique across the test.
func sendersLoop(c *remote.Client, tl *told, seq *atomic.Int64, stop <-chan struct{}) {
	p, err := equeue.NewProducer(c, nil)
	if err != nil {
		panic(err)
	}
	defer func() { _ = p.Close() }()
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(50+rand50(seq))*time.Millisecond)
				switch w {
				case 0:
					body := fmt.Sprintf("s-%d", seq.Add(1))
					_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(body)})
					tl.set(body, err)
				case 1:
					var batch []*equeue.Message
					for range 3 {
						batch = append(batch, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "b-%d", seq.Add(1))})
					}
					_, err := p.SendBatch(ctx, batch)
					for _, m := range batch {
						tl.set(string(m.Body), err)
					}
				default:
					var bodies []string
					var futs []*equeue.SendFuture
					for range 16 {
						body := fmt.Sprintf("a-%d", seq.Add(1))
						bodies = append(bodies, body)
						futs = append(futs, p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte(body)}))
					}
					for i, f := range futs {
						_, err := f.Result(context.Background())
						tl.set(bodies[i], err)
					}
				}
				cancel()
			}
		})
	}
	wg.Wait()
}

// pullAndCommit fetches every queue pc holds and commits what it fetched,
// on short contexts, until stop is closed; committed gets, per queue, the
// highest offset a commit of which was answered committed.
func pullAndCommit(pc *equeue.PullConsumer, committed map[int]int64, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		qs := pc.Assigned()
		if len(qs) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		for _, q := range qs {
			ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
			msgs, err := pc.Fetch(ctx, q, 16, 10*time.Millisecond)
			if err == nil && len(msgs) > 0 {
				next := msgs[len(msgs)-1].Offset + 1
				if pc.Commit(ctx, q, next) == nil {
					committed[q.Queue] = max(committed[q.Queue], next)
				}
			}
			cancel()
		}
	}
}

func rand50(seq *atomic.Int64) int { return int(seq.Load()*7919) % 50 }

// TestMultiProcess_BrokerKilledOrPausedMidStream sends over a client to a
// broker process, one by one, in batches and pipelined on the append
// stream, each on a short context, while the broker is paused (SIGSTOP,
// past the contexts) and woken, and then killed (SIGKILL) mid-stream.
// The broker's directory, opened again, holds every message answered
// stored once, none answered not stored, and each of unknown outcome at
// most once.
func TestMultiProcess_BrokerKilledOrPausedMidStream(t *testing.T) {
	needChildSignals(t)
	if testing.Short() {
		t.Skip("starts a broker process")
	}
	for round := range nemesisRounds() {
		dir := t.TempDir()
		addr := freeAddr(t)
		env := []string{"EQUEUE_MP_ADDR=" + addr, "EQUEUE_MP_DIR=" + dir}
		broker := startChild(t, "broker", fmt.Sprintf("broker-%d", round), env...)
		c := dial(t, addr, &remote.ClientOptions{MaxReconnectDelay: 50 * time.Millisecond})
		tl := newTold()
		var seq atomic.Int64
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			sendersLoop(c, tl, &seq, stop)
		}()
		// A pull consumer fetches and commits meanwhile; the commits
		// answered committed must outlive the broker.
		pc, err := equeue.NewPullConsumer(c, equeue.PullConsumerOptions{Group: "g", ID: "m1",
			Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest, HeartbeatInterval: 100 * time.Millisecond})
		require.NoError(t, err)
		require.NoError(t, pc.Start(ctxT(t)))
		committed := map[int]int64{}
		pulled := make(chan struct{})
		go func() {
			defer close(pulled)
			pullAndCommit(pc, committed, stop)
		}()
		progress := func(min int64) {
			eventually(t, 30*time.Second, func() bool { return seq.Load() >= min }, "senders progress")
		}
		progress(300)
		require.NoError(t, broker.cmd.Process.Signal(sigPause))
		time.Sleep(300 * time.Millisecond) // past every sender's context
		require.NoError(t, broker.cmd.Process.Signal(sigResume))
		progress(seq.Load() + 300)
		broker.stop(t, syscall.SIGKILL)
		refused := func() int {
			tl.mu.Lock()
			defer tl.mu.Unlock()
			n := 0
			for _, o := range tl.outs {
				if o == notStored {
					n++
				}
			}
			return n
		}
		before := refused()
		eventually(t, 30*time.Second, func() bool { return refused() > before+50 }, "sends fail on the dead broker")
		close(stop)
		<-done
		<-pulled
		_ = pc.Close() // the broker is dead: the leave fails
		require.NoError(t, c.Close())

		e, err := equeue.Open(dir, nil)
		require.NoError(t, err)
		tl.check(t, fmt.Sprintf("round %d", round), e, "t")
		var counts [3]int
		for _, o := range tl.outs {
			counts[o]++
		}
		t.Logf("round %d: %d stored, %d not stored, %d unknown; commits %v", round, counts[stored], counts[notStored], counts[unknown], committed)
		gi, err := e.Group(ctxT(t), "g")
		require.NoError(t, err)
		for _, q := range gi.Queues {
			if q.Topic == "t" {
				require.GreaterOrEqual(t, q.Committed, committed[q.Queue], "round %d: queue %d's commit answered committed", round, q.Queue)
			}
		}
		require.NoError(t, e.Close())
		if t.Failed() {
			return
		}
	}
}
