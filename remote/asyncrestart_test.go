package remote_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// readTopic returns every message of topic's queues on e, by body.
func readTopic(t *testing.T, e *equeue.Engine, topic string) map[string][]*equeue.Message {
	t.Helper()
	ctx := ctxT(t)
	ti, err := e.Topic(ctx, topic)
	require.NoError(t, err)
	out := map[string][]*equeue.Message{}
	for _, q := range ti.Queues {
		for off := q.MinOffset; off < q.MaxOffset; {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: topic, Queue: q.ID, Offset: off, Max: 512})
			require.NoError(t, err)
			if res.Status != equeue.PullFound {
				break
			}
			for _, m := range res.Messages {
				out[string(m.Body)] = append(out[string(m.Body)], m)
			}
			off = res.NextOffset
		}
	}
	return out
}

// servedDir is an engine on a directory served over remote, which a test
// restarts (server stopped, engine closed and opened again on its
// directory, served again on the same address) while clients send.
type servedDir struct {
	t   *testing.T
	dir string
	mu  sync.Mutex // guards e across a restart
	e   *equeue.Engine
	s   *server
}

// openServedDir opens an engine on a temp dir and serves it.
func openServedDir(t *testing.T) *servedDir {
	d := &servedDir{t: t, dir: t.TempDir()}
	e, err := equeue.Open(d.dir, nil)
	require.NoError(t, err)
	d.e = e
	t.Cleanup(func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		require.NoError(t, d.e.Close())
	})
	d.s = startServer(t, e, "", nil)
	return d
}

// restart stops the server (gracefully, or at once), closes the engine,
// opens it again on its directory and serves it on the same address.
func (d *servedDir) restart(graceful bool) { d.restartWith(graceful, true) }

// restartWith stops the server (gracefully, or at once), closes the
// engine and opens it again on its directory when reopen is set, and
// serves the engine on the same address.
func (d *servedDir) restartWith(graceful, reopen bool) {
	if graceful {
		d.s.srv.GracefulStop()
	}
	d.s.stop()
	if reopen {
		d.mu.Lock()
		require.NoError(d.t, d.e.Close())
		e, err := equeue.Open(d.dir, nil)
		if err == nil {
			d.e = e
		}
		d.mu.Unlock()
		require.NoError(d.t, err)
	}
	d.s = startServer(d.t, d.engine(), d.s.addr, nil)
}

// engine is the engine served now.
func (d *servedDir) engine() *equeue.Engine {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.e
}

// read returns the topic's messages by body (readTopic).
func (d *servedDir) read(topic string) map[string][]*equeue.Message {
	d.mu.Lock()
	defer d.mu.Unlock()
	return readTopic(d.t, d.e, topic)
}

// TestRemote_SendAsyncOutcomesHoldAcrossARestart sends many messages with
// SendAsync over a client while the broker is stopped (at once, or
// gracefully), its engine closed and opened again on its directory, and
// served again on the same address. Every future ends, as stored, not
// stored or unknown (ErrIndeterminate), and the engine never contradicts
// it: a stored message is read back after the restart once, at the
// offset its future gave, and a message not stored is never there.
func TestRemote_SendAsyncOutcomesHoldAcrossARestart(t *testing.T) {
	for _, stop := range []string{"stop", "graceful"} {
		t.Run(stop, func(t *testing.T) { testSendAsyncAcrossRestart(t, stop) })
	}
}

func testSendAsyncAcrossRestart(t *testing.T, stop string) {
	const n = 3000
	ctx := ctxT(t)
	d := openServedDir(t)
	client := dial(t, d.s.addr, &remote.ClientOptions{MaxReconnectDelay: 200 * time.Millisecond})
	require.NoError(t, client.CreateTopic(ctx, "t", 3))
	p := newProducer(t, client)

	futures := make([]*equeue.SendFuture, n)
	var wg sync.WaitGroup
	wg.Add(1)
	started, restarted := make(chan struct{}), make(chan struct{})
	go func() {
		defer wg.Done()
		for i := range n {
			if i == 2*n/3 {
				<-restarted
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			futures[i] = p.SendAsync(sctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m-%d", i)})
			go func(f *equeue.SendFuture) { <-f.Done(); cancel() }(futures[i])
			if i == n/3 {
				close(started)
			}
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	<-started
	d.restart(stop == "graceful")
	close(restarted)
	wg.Wait()

	stored, notStored, unknown := map[string]equeue.SendResult{}, map[string]error{}, map[string]error{}
	for i, f := range futures {
		body := fmt.Sprintf("m-%d", i)
		res, err := f.Result(ctx)
		switch {
		case err == nil:
			stored[body] = res
		case errors.Is(err, equeue.ErrIndeterminate):
			unknown[body] = err
		default:
			notStored[body] = err
		}
	}
	t.Logf("stored %d, not stored %d, unknown %d", len(stored), len(notStored), len(unknown))
	for body, err := range notStored {
		assert.True(t, errors.Is(err, remote.ErrUnavailable) || errors.Is(err, equeue.ErrClosed) || errors.Is(err, remote.ErrBusy),
			"%s not stored with an error no sentinel names: %v", body, err)
	}
	for body, err := range unknown {
		assert.ErrorIs(t, err, equeue.ErrIndeterminate, body)
	}
	got := d.read("t")
	for body, res := range stored {
		if assert.Len(t, got[body], 1, "%s stored (%+v)", body, res) {
			m := got[body][0]
			assert.Equal(t, res.Queue, m.Queue, "%s's queue", body)
			assert.Equal(t, res.Offset, m.Offset, "%s's offset", body)
		}
	}
	for body, err := range notStored {
		assert.Empty(t, got[body], "%s reported not stored (%v) is stored", body, err)
	}
	for body := range unknown {
		assert.LessOrEqual(t, len(got[body]), 1, "%s stored more than once", body)
	}
}

// TestRemote_SendAsyncWithIDsResentAfterARestartIsStoredOnce sends
// messages with IDs, some delayed, with SendAsync to a topic with a dedup
// window while the broker stops at once and its engine is closed and
// opened again on its directory. After the restart every message whose
// future did not say stored is sent again with its ID, as the README
// tells: each message is then stored exactly once (the delayed ones once
// they are due), and one reported stored is not stored a second time.
func TestRemote_SendAsyncWithIDsResentAfterARestartIsStoredOnce(t *testing.T) {
	const n = 1500
	ctx := ctxT(t)
	d := openServedDir(t)
	require.NoError(t, d.e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 3, DedupWindow: time.Hour}))
	client := dial(t, d.s.addr, &remote.ClientOptions{MaxReconnectDelay: 100 * time.Millisecond})
	p := newProducer(t, client)
	msg := func(i int) *equeue.Message {
		m := &equeue.Message{Topic: "t", ID: fmt.Sprintf("id-%d", i), Body: fmt.Appendf(nil, "m-%d", i), Keys: []string{fmt.Sprint(i % 5)}}
		if i%5 == 0 {
			m.Delay = 300 * time.Millisecond
		}
		return m
	}

	futures := make([]*equeue.SendFuture, n)
	var wg sync.WaitGroup
	started, restarted := make(chan struct{}), make(chan struct{})
	wg.Go(func() {
		for i := range n {
			if i == 2*n/3 {
				<-restarted
			}
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			futures[i] = p.SendAsync(sctx, msg(i))
			go func(f *equeue.SendFuture) { <-f.Done(); cancel() }(futures[i])
			if i == n/3 {
				close(started)
			}
			if i%50 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	})
	<-started
	d.restart(false)
	close(restarted)
	wg.Wait()

	resent := 0
	for i, f := range futures {
		if _, err := f.Result(ctx); err == nil {
			continue
		}
		resent++
		eventually(t, 10*time.Second, func() bool {
			_, err := p.Send(ctx, msg(i))
			return err == nil
		}, "message %d sent again", i)
	}
	t.Logf("%d sent again", resent)
	eventually(t, 10*time.Second, func() bool { return len(d.read("t")) == n }, "every message stored")
	got := d.read("t")
	for i := range n {
		assert.Len(t, got[fmt.Sprintf("m-%d", i)], 1, "message %d", i)
	}
}

// TestRemote_SendBatchOutcomesHoldAcrossARestart sends batches from several
// goroutines over a client while the broker stops (at once, or gracefully)
// and its engine is closed and opened again on its directory. A batch is
// stored whole or not at all: one reported stored is read back after the
// restart, whole, at the offsets its result gave; one reported not stored
// is not there; one whose outcome is unknown is there whole or not at all.
func TestRemote_SendBatchOutcomesHoldAcrossARestart(t *testing.T) {
	for _, stop := range []string{"stop", "graceful"} {
		t.Run(stop, func(t *testing.T) { testSendBatchAcrossRestart(t, stop) })
	}
}

func testSendBatchAcrossRestart(t *testing.T, stop string) {
	const workers, batches, size = 4, 60, 8
	ctx := ctxT(t)
	d := openServedDir(t)
	client := dial(t, d.s.addr, &remote.ClientOptions{MaxReconnectDelay: 100 * time.Millisecond})
	require.NoError(t, client.CreateTopic(ctx, "t", 3))
	p := newProducer(t, client)

	type outcome struct {
		res equeue.BatchResult
		err error
	}
	outcomes := make([][batches]outcome, workers)
	var wg sync.WaitGroup
	var sent sync.WaitGroup
	sent.Add(workers)
	restarted := make(chan struct{})
	for w := range workers {
		wg.Go(func() {
			for b := range batches {
				if b == batches/3 {
					sent.Done()
				}
				if b == 2*batches/3 {
					<-restarted
				}
				msgs := make([]*equeue.Message, size)
				for i := range msgs {
					msgs[i] = &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "w%d-b%d-m%d", w, b, i)}
				}
				sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				res, err := p.SendBatch(sctx, msgs)
				cancel()
				outcomes[w][b] = outcome{res, err}
			}
		})
	}
	sent.Wait()
	d.restart(stop == "graceful")
	close(restarted)
	wg.Wait()

	got := d.read("t")
	counts := map[string]int{}
	for w := range workers {
		for b, o := range outcomes[w] {
			stored := 0
			for i := range size {
				body := fmt.Sprintf("w%d-b%d-m%d", w, b, i)
				assert.LessOrEqual(t, len(got[body]), 1, "%s stored more than once", body)
				if len(got[body]) == 1 {
					stored++
					if o.err == nil {
						m := got[body][0]
						assert.Equal(t, o.res.Queue, m.Queue, "%s's queue", body)
						assert.Equal(t, o.res.FirstOffset+int64(i), m.Offset, "%s's offset", body)
					}
				}
			}
			switch {
			case o.err == nil:
				counts["stored"]++
				assert.Equal(t, size, stored, "batch %d/%d reported stored", w, b)
			case errors.Is(o.err, equeue.ErrIndeterminate):
				counts["unknown"]++
				assert.Contains(t, []int{0, size}, stored, "batch %d/%d (unknown: %v) stored in part", w, b, o.err)
			default:
				counts["not stored"]++
				assert.True(t, errors.Is(o.err, remote.ErrUnavailable) || errors.Is(o.err, equeue.ErrClosed) || errors.Is(o.err, remote.ErrBusy),
					"batch %d/%d not stored with an error no sentinel names: %v", w, b, o.err)
				assert.Zero(t, stored, "batch %d/%d reported not stored (%v) is stored", w, b, o.err)
			}
		}
	}
	t.Logf("%v", counts)
}
