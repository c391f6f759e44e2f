package remote_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// resendUntilStored sends msgs (one message by Send, several by SendBatch,
// or each by SendAsync when async is set) again and again with their IDs,
// on short contexts, until each is answered stored or stop is closed; it
// returns the IDs answered stored.
func resendUntilStored(p *equeue.Producer, msgs []*equeue.Message, async bool, stop <-chan struct{}) []string {
	var ok []string
	left := msgs
	for len(left) > 0 {
		select {
		case <-stop:
			return ok
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		var next []*equeue.Message
		switch {
		case async:
			var futs []*equeue.SendFuture
			for _, m := range left {
				futs = append(futs, p.SendAsync(ctx, m))
			}
			for i, f := range futs {
				if _, err := f.Result(context.Background()); err != nil {
					next = append(next, left[i])
				} else {
					ok = append(ok, left[i].ID)
				}
			}
		case len(left) == 1:
			if _, err := p.Send(ctx, left[0]); err != nil {
				next = left
			} else {
				ok = append(ok, left[0].ID)
			}
		default:
			if _, err := p.SendBatch(ctx, left); err != nil {
				next = left
			} else {
				for _, m := range left {
					ok = append(ok, m.ID)
				}
			}
		}
		cancel()
		if len(next) > 0 {
			time.Sleep(20 * time.Millisecond)
		}
		left = next
	}
	return ok
}

// TestMultiProcess_DedupResendsAcrossBrokerKills sends messages with IDs
// to a topic with a dedup window on a broker process, sending each again
// with its ID until it is answered stored, as the README tells callers to
// after an unknown outcome, while the broker is paused (SIGSTOP) past the
// senders' contexts, and killed (SIGKILL) and started again on its
// directory. Every message answered stored is stored exactly once.
func TestMultiProcess_DedupResendsAcrossBrokerKills(t *testing.T) {
	needChildSignals(t)
	if testing.Short() {
		t.Skip("starts broker processes")
	}
	for round := range nemesisRounds() {
		dir := t.TempDir()
		addr := freeAddr(t)
		env := []string{"EQUEUE_MP_ADDR=" + addr, "EQUEUE_MP_DIR=" + dir}
		broker := startChild(t, "broker", fmt.Sprintf("broker-%d", round), env...)
		c := dial(t, addr, &remote.ClientOptions{MaxReconnectDelay: 50 * time.Millisecond})
		require.NoError(t, c.CreateTopicWith(ctxT(t), "d", equeue.TopicOptions{Queues: 4, DedupWindow: time.Hour}))
		p := newProducer(t, c)

		var (
			mu     sync.Mutex
			acked  = map[string]int{}
			sent   atomic.Int64
			seq    atomic.Int64
			stop   = make(chan struct{})
			wg     sync.WaitGroup
			giveUp = make(chan struct{})
		)
		for w := range 3 {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
					size := []int{1, 3, 8}[w]
					var msgs []*equeue.Message
					for range size {
						id := fmt.Sprintf("id-%d", seq.Add(1))
						msgs = append(msgs, &equeue.Message{Topic: "d", ID: id, Body: []byte(id)})
					}
					ok := resendUntilStored(p, msgs, w == 2, giveUp)
					mu.Lock()
					for _, id := range ok {
						acked[id]++
					}
					mu.Unlock()
					sent.Add(int64(len(ok)))
				}
			})
		}
		progress := func(min int64) {
			eventually(t, 60*time.Second, func() bool { return sent.Load() >= min }, "senders progress: %v",
				func() any { return sent.Load() })
		}
		progress(200)
		require.NoError(t, broker.cmd.Process.Signal(sigPause))
		time.Sleep(400 * time.Millisecond) // past every sender's context
		require.NoError(t, broker.cmd.Process.Signal(sigResume))
		progress(sent.Load() + 200)
		broker.stop(t, syscall.SIGKILL)
		broker = startChild(t, "broker", fmt.Sprintf("broker-%d-again", round), env...)
		progress(sent.Load() + 200)
		close(stop)
		wg.Wait() // each sender ends once its messages are stored
		close(giveUp)
		broker.stop(t, syscall.SIGTERM)

		e, err := equeue.Open(dir, nil)
		require.NoError(t, err)
		got := readTopic(t, e, "d")
		require.NoError(t, e.Close())
		mu.Lock()
		for id := range acked {
			assert.Len(t, got[id], 1, "round %d: %s answered stored", round, id)
		}
		for id, ms := range got {
			_, ok := acked[id]
			assert.True(t, ok, "round %d: %s stored, never answered so", round, id)
			assert.Len(t, ms, 1, "round %d: %s stored once", round, id)
		}
		t.Logf("round %d: %d stored", round, len(acked))
		mu.Unlock()
		if t.Failed() {
			return
		}
	}
}
