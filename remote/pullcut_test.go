package remote_test

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/holdproxy"
	"github.com/equeue-go/equeue/remote"
)

// TestRemote_PullConsumerConnectionCutMidFetch runs a remote PullConsumer
// (reading ahead) whose connection is cut again and again while its
// Fetches wait and messages keep coming. A Fetch cut off fails with an
// error matching remote.ErrUnavailable and moves nothing: the Fetches
// that follow return every message of each queue once, in order, none
// skipped, and commits go on landing after the cuts.
func TestRemote_PullConsumerConnectionCutMidFetch(t *testing.T) {
	const n = 1500
	ctx := ctxT(t)
	e, err := equeue.Open(t.TempDir(), &equeue.Options{Sync: equeue.SyncNever})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	s := startServer(t, e, "", nil)
	proxy := holdproxy.New(t, s.addr)
	client := dial(t, proxy.Addr(), &remote.ClientOptions{MaxReconnectDelay: 100 * time.Millisecond})

	pc, err := equeue.NewPullConsumer(client, equeue.PullConsumerOptions{Group: "g", ID: "m1",
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, HeartbeatInterval: 200 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })
	eventually(t, 10*time.Second, func() bool { return len(pc.Assigned()) == 2 }, "both queues assigned")

	var sent atomic.Int64
	sendDone := make(chan struct{})
	go func() {
		defer close(sendDone)
		p, err := equeue.NewProducer(e, nil)
		if err != nil {
			return
		}
		defer func() { _ = p.Close() }()
		for i := range n {
			if _, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m-%d", i)}); err != nil {
				return
			}
			sent.Add(1)
			if i%20 == 0 {
				time.Sleep(time.Millisecond)
			}
		}
	}()
	cuts := make(chan struct{})
	go func() {
		defer close(cuts)
		// Not eventually: this goroutine may not fail the test. Sends that
		// stop early leave fewer cuts, and the test's count fails.
		deadline := time.Now().Add(20 * time.Second)
		for i := range 6 {
			for sent.Load() < int64((i+1)*n/8) {
				if time.Now().After(deadline) {
					return
				}
				time.Sleep(time.Millisecond)
			}
			proxy.Cut()
		}
	}()

	fetched := map[equeue.QueueRef][]int64{}
	total, failures := 0, 0
	for total < n {
		for _, q := range pc.Assigned() {
			msgs, err := pc.Fetch(ctx, q, 64, 100*time.Millisecond)
			if err != nil {
				failures++
				require.True(t, errors.Is(err, remote.ErrUnavailable), "a Fetch cut off failed with %v", err)
				continue
			}
			for _, m := range msgs {
				fetched[q] = append(fetched[q], m.Offset)
			}
			total += len(msgs)
			if len(msgs) > 0 {
				if err := pc.Commit(ctx, q, msgs[len(msgs)-1].Offset+1); err != nil {
					require.True(t, errors.Is(err, remote.ErrUnavailable), "a commit cut off failed with %v", err)
				}
			}
		}
		require.NoError(t, ctx.Err())
	}
	<-cuts
	<-sendDone
	t.Logf("%d Fetches failed", failures)
	for q, offs := range fetched {
		for i, off := range offs {
			if !assert.Equal(t, int64(i), off, "%s: Fetch %d returned offset %d", q, i, off) {
				break
			}
		}
	}
	assert.Equal(t, n, total)
	// The commits land after the cuts: committing each queue's end (again,
	// if the last one was cut off) leaves the group at what was fetched.
	for q, offs := range fetched {
		eventually(t, 10*time.Second, func() bool { return pc.Commit(ctx, q, int64(len(offs))) == nil }, "commit %s", q)
	}
	got, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	for q, offs := range fetched {
		assert.Equal(t, int64(len(offs)), got[q], "%s: committed offset", q)
	}
}
