package equeue_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

func TestOpen_LockedDirectory(t *testing.T) {
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	defer e.Close()
	_, err = equeue.Open(dir, nil)
	require.Error(t, err)
	assert.ErrorIs(t, err, equeue.ErrLocked)
	assert.Contains(t, err.Error(), dir)
}

func TestOpen_BadDirectory(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o600))
	_, err := equeue.Open(f, nil)
	require.Error(t, err)
	_, err = equeue.Open(filepath.Join(f, "sub"), nil)
	require.Error(t, err)
}

func TestOpen_InvalidOptions(t *testing.T) {
	cases := map[string]struct {
		dir  string
		opts equeue.Options
	}{
		"no dir":               {"", equeue.Options{}},
		"dir with memory":      {t.TempDir(), equeue.Options{InMemory: true}},
		"zero interval":        {"", equeue.Options{InMemory: true, Sync: equeue.SyncInterval(0)}},
		"negative queues":      {"", equeue.Options{InMemory: true, DefaultQueues: -1}},
		"too many queues":      {"", equeue.Options{InMemory: true, DefaultQueues: 257}},
		"negative max message": {"", equeue.Options{InMemory: true, MaxMessageSize: -1}},
		"tiny session timeout": {"", equeue.Options{InMemory: true, SessionTimeout: time.Millisecond}},
		"memory and store":     {"", equeue.Options{InMemory: true, Store: store.NewMemory()}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			e, err := equeue.Open(c.dir, &c.opts)
			if e != nil {
				_ = e.Close()
			}
			assert.ErrorIs(t, err, equeue.ErrInvalidOptions)
		})
	}
}

func TestEngine_CallsAfterClose(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	require.NoError(t, e.Close())
	require.NoError(t, e.Close(), "Close is idempotent")

	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	assert.ErrorIs(t, err, equeue.ErrClosed)
	assert.ErrorIs(t, e.CreateTopic(ctx, "u", 1), equeue.ErrClosed)
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	assert.ErrorIs(t, err, equeue.ErrClosed)
	_, err = e.Topics(ctx)
	assert.ErrorIs(t, err, equeue.ErrClosed)
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x")}}})
	assert.ErrorIs(t, err, equeue.ErrClosed)
	assert.ErrorIs(t, e.DeleteTopic(ctx, "t"), equeue.ErrClosed)
}

func TestTopic_Lifecycle(t *testing.T) {
	e, reopen := openEngine(t, "badger", nil)
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "orders", 0))
	require.NoError(t, e.CreateTopic(ctx, "audit.log_v-1", 2))
	assert.ErrorIs(t, e.CreateTopic(ctx, "orders", 3), equeue.ErrTopicExists)

	p := newProducer(t, e, nil)
	for i := range 10 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "orders", Body: fmt.Appendf(nil, "m%d", i)})
		require.NoError(t, err)
	}
	require.NoError(t, e.AddQueues(ctx, "orders", 2))
	require.NoError(t, e.SetQueueWritable(ctx, "orders", 1, false))

	check := func(e *equeue.Engine) {
		ts, err := e.Topics(ctx)
		require.NoError(t, err)
		require.Len(t, ts, 2)
		assert.Equal(t, "audit.log_v-1", ts[0].Name)
		assert.Len(t, ts[0].Queues, 2)
		orders := ts[1]
		require.Len(t, orders.Queues, 6, "4 default queues plus 2 added")
		var total int64
		for _, q := range orders.Queues {
			assert.Equal(t, int64(0), q.MinOffset)
			total += q.MaxOffset
			assert.Equal(t, q.ID != 1, q.Writable, "queue %d", q.ID)
		}
		assert.Equal(t, int64(10), total, "round robin spread 10 messages over the first 4 queues")
	}
	check(e)
	e = reopen()
	check(e)

	require.NoError(t, e.DeleteTopic(ctx, "orders"))
	_, err := e.Topic(ctx, "orders")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.ErrorIs(t, e.DeleteTopic(ctx, "orders"), equeue.ErrTopicNotFound)
	e = reopen()
	_, err = e.Topic(ctx, "orders")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)

	// A recreated topic starts empty: nothing of the old one shows through.
	require.NoError(t, e.CreateTopic(ctx, "orders", 4))
	info, err := e.Topic(ctx, "orders")
	require.NoError(t, err)
	for _, q := range info.Queues {
		assert.Zero(t, q.MaxOffset)
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "orders", Queue: q.ID})
		require.NoError(t, err)
		assert.Empty(t, res.Messages)
	}
}

func TestTopic_BadInput(t *testing.T) {
	e, _ := openEngine(t, "memory", nil)
	ctx := ctxT(t)
	for _, name := range []string{"", "a b", "a/b", "ü", "%RETRY%g", "%DLQ%g", strings.Repeat("x", 128), "a\x00"} {
		assert.ErrorIs(t, e.CreateTopic(ctx, name, 1), equeue.ErrInvalidName, "name %q", name)
	}
	require.NoError(t, e.CreateTopic(ctx, strings.Repeat("x", 127), 1))
	for _, n := range []int{-1, 257} {
		assert.ErrorIs(t, e.CreateTopic(ctx, fmt.Sprintf("q%d", n+10), n), equeue.ErrInvalidArgument)
	}
	require.NoError(t, e.CreateTopic(ctx, "max", 256))
	assert.ErrorIs(t, e.AddQueues(ctx, "max", 1), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, e.AddQueues(ctx, "nope", 1), equeue.ErrTopicNotFound)
	assert.ErrorIs(t, e.AddQueues(ctx, "max", 0), equeue.ErrInvalidArgument)
	assert.ErrorIs(t, e.SetQueueWritable(ctx, "max", 256, false), equeue.ErrQueueNotFound)
	assert.ErrorIs(t, e.SetQueueWritable(ctx, "max", -1, false), equeue.ErrQueueNotFound)
	_, err := e.Topic(ctx, "nope")
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
}

func TestProducer_UnknownTopicAndAutoCreate(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "nope", Body: []byte("x")})
	assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	_, err = p.Send(ctx, &equeue.Message{Topic: "bad name", Body: []byte("x")})
	assert.ErrorIs(t, err, equeue.ErrInvalidName)

	auto, _ := openEngine(t, "memory", &equeue.Options{AutoCreateTopics: true, DefaultQueues: 3})
	p2 := newProducer(t, auto, nil)
	res, err := p2.Send(ctx, &equeue.Message{Topic: "fresh", Body: []byte("x")})
	require.NoError(t, err)
	assert.Equal(t, int64(0), res.Offset)
	info, err := auto.Topic(ctx, "fresh")
	require.NoError(t, err)
	assert.Len(t, info.Queues, 3)
}

func TestProducer_MessageTooLarge(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, kind, &equeue.Options{MaxMessageSize: 1 << 10})
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			p := newProducer(t, e, nil)
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: make([]byte, 2<<10)})
			assert.ErrorIs(t, err, equeue.ErrMessageTooLarge)
			_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: make([]byte, 900)})
			require.NoError(t, err)
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			assert.Equal(t, int64(1), info.Queues[0].MaxOffset, "the rejected message took no offset")
		})
	}
	t.Run("default 4MiB", func(t *testing.T) {
		ctx := ctxT(t)
		e, _ := openEngine(t, "badger", nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		p := newProducer(t, e, nil)
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: make([]byte, 4<<20)})
		assert.ErrorIs(t, err, equeue.ErrMessageTooLarge)
		big := make([]byte, 4<<20-1024)
		big[len(big)-1] = 7
		res, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: big})
		require.NoError(t, err)
		got, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: res.Offset})
		require.NoError(t, err)
		require.Len(t, got.Messages, 1)
		assert.Equal(t, big, got.Messages[0].Body)
	})
}

func TestMessage_RoundTrip(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, kind, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			p := newProducer(t, e, nil)
			born := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
			expires := time.Now().Add(time.Hour).Round(0)
			in := []*equeue.Message{
				{Topic: "t", ID: "my-id-1", Tag: "TagA", Keys: []string{"k1", "k2"},
					Properties: map[string]string{"a": "1", "": "empty key", "ü": "ñ"},
					Body:       []byte{0, 1, 2, 255}, BornAt: born, ExpiresAt: expires},
				{Topic: "t", Keys: []string{"k1"}, Body: nil},
				{Topic: "t", Keys: []string{"k1"}, Body: []byte(strings.Repeat("z", 70000))},
			}
			var results []equeue.SendResult
			for _, m := range in {
				r, err := p.Send(ctx, m)
				require.NoError(t, err)
				results = append(results, r)
			}
			assert.Equal(t, "my-id-1", results[0].ID)
			assert.NotEmpty(t, results[1].ID)
			assert.NotEqual(t, results[1].ID, results[2].ID)
			q := results[0].Queue
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: q})
			require.NoError(t, err)
			require.Len(t, res.Messages, 3)
			for i, got := range res.Messages {
				want := in[i]
				assert.Equal(t, results[i].ID, got.ID)
				assert.Equal(t, "t", got.Topic)
				assert.Equal(t, want.Tag, got.Tag)
				assert.Equal(t, want.Keys, got.Keys)
				assert.Equal(t, want.Properties, got.Properties)
				assert.Equal(t, want.Body, got.Body)
				assert.Equal(t, q, got.Queue)
				assert.Equal(t, results[i].Offset, got.Offset)
				assert.True(t, results[i].StoredAt.Equal(got.StoredAt), "stored at %v vs %v", results[i].StoredAt, got.StoredAt)
				assert.True(t, want.ExpiresAt.Equal(got.ExpiresAt))
				assert.Zero(t, got.Attempt)
			}
			assert.True(t, born.Equal(res.Messages[0].BornAt))
			assert.False(t, res.Messages[1].BornAt.IsZero(), "born-at is set when the producer leaves it zero")
		})
	}
}

func TestProducer_KeyRoutingAndRoundRobin(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 8))
	p := newProducer(t, e, nil)
	queueOf := map[string]int{}
	perKey := map[string][]int64{}
	for i := range 200 {
		key := fmt.Sprintf("user-%d", i%13)
		r, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{key}, Body: []byte{byte(i)}})
		require.NoError(t, err)
		if q, ok := queueOf[key]; ok {
			assert.Equal(t, q, r.Queue, "key %s moved queue", key)
		}
		queueOf[key] = r.Queue
		perKey[key] = append(perKey[key], r.Offset)
	}
	for k, offs := range perKey {
		assert.True(t, sort.SliceIsSorted(offs, func(i, j int) bool { return offs[i] < offs[j] }), "key %s out of order", k)
	}
	counts := map[int]int{}
	for range 80 {
		r, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("rr")})
		require.NoError(t, err)
		counts[r.Queue]++
	}
	for q := range 8 {
		assert.Equal(t, 10, counts[q], "round robin queue %d", q)
	}

	// A queue closed to producers is skipped; a custom selector is honoured.
	require.NoError(t, e.SetQueueWritable(ctx, "t", 3, false))
	p2 := newProducer(t, e, nil)
	for range 40 {
		r, err := p2.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		require.NoError(t, err)
		assert.NotEqual(t, 3, r.Queue)
	}
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 3, Messages: []*equeue.Message{{Body: []byte("x")}}})
	assert.ErrorIs(t, err, equeue.ErrQueueNotWritable)
	last := newProducer(t, e, &equeue.ProducerOptions{Selector: equeue.QueueSelectorFunc(func(_ *equeue.Message, w []int) int { return w[len(w)-1] })})
	r, err := last.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	assert.Equal(t, 7, r.Queue)
	bad := newProducer(t, e, &equeue.ProducerOptions{Selector: equeue.QueueSelectorFunc(func(*equeue.Message, []int) int { return 99 })})
	_, err = bad.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	assert.ErrorIs(t, err, equeue.ErrQueueNotFound)
}

func TestProducer_SendBatchAndAsync(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, kind, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 4))
			p := newProducer(t, e, nil)
			var batch []*equeue.Message
			for i := range 100 {
				batch = append(batch, &equeue.Message{Topic: "t", Keys: []string{"same"}, Body: fmt.Appendf(nil, "%d", i)})
			}
			br, err := p.SendBatch(ctx, batch)
			require.NoError(t, err)
			require.Len(t, br.IDs, 100)
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: br.Queue, Offset: br.FirstOffset, Max: 1000})
			require.NoError(t, err)
			require.Len(t, res.Messages, 100)
			for i, m := range res.Messages {
				assert.Equal(t, fmt.Sprint(i), string(m.Body))
				assert.Equal(t, br.IDs[i], m.ID)
			}
			_, err = p.SendBatch(ctx, []*equeue.Message{{Topic: "t"}, {Topic: "other"}})
			assert.ErrorIs(t, err, equeue.ErrInvalidArgument)
			_, err = p.SendBatch(ctx, nil)
			assert.ErrorIs(t, err, equeue.ErrInvalidArgument)

			var futures []*equeue.SendFuture
			for i := range 500 {
				futures = append(futures, p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "a%d", i)}))
			}
			seen := map[[2]int64]bool{}
			for _, f := range futures {
				r, err := f.Result(ctx)
				require.NoError(t, err)
				k := [2]int64{int64(r.Queue), r.Offset}
				assert.False(t, seen[k], "duplicate position %v", k)
				seen[k] = true
			}
			f := p.SendAsync(ctx, &equeue.Message{Topic: "nope"})
			_, err = f.Result(ctx)
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
		})
	}
}

// TestProducer_ConcurrentDenseOffsets has many producers send at once and
// checks that every queue's offsets are dense, with no gap or duplicate, and
// that a restart recovers every queue's next offset.
func TestProducer_ConcurrentDenseOffsets(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, reopen := openEngine(t, kind, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 4))
			const senders, each = 32, 60
			var (
				mu   sync.Mutex
				got  = map[int][]int64{}
				ids  = map[string]bool{}
				wg   sync.WaitGroup
				errs = make(chan error, senders)
			)
			p := newProducer(t, e, nil)
			for s := range senders {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						var r equeue.SendResult
						var err error
						if i%3 == 0 {
							r, err = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d-%d", s, i)}).Result(ctx)
						} else {
							r, err = p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{fmt.Sprint(s)}, Body: fmt.Appendf(nil, "%d-%d", s, i)})
						}
						if err != nil {
							errs <- err
							return
						}
						mu.Lock()
						got[r.Queue] = append(got[r.Queue], r.Offset)
						ids[r.ID] = true
						mu.Unlock()
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				require.NoError(t, err)
			}
			assert.Len(t, ids, senders*each, "unique IDs")
			total := 0
			for q, offs := range got {
				sort.Slice(offs, func(i, j int) bool { return offs[i] < offs[j] })
				for i, o := range offs {
					require.Equal(t, int64(i), o, "queue %d: offsets must be dense", q)
				}
				total += len(offs)
			}
			assert.Equal(t, senders*each, total)
			if kind != "badger" {
				return
			}
			e = reopen()
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			for _, q := range info.Queues {
				assert.Equal(t, int64(len(got[q.ID])), q.MaxOffset, "queue %d next offset after reopen", q.ID)
			}
			p2 := newProducer(t, e, nil)
			r, err := p2.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{"0"}, Body: []byte("after")})
			require.NoError(t, err)
			assert.Equal(t, int64(len(got[r.Queue])), r.Offset, "the first send after reopen continues densely")
		})
	}
}

func TestSync_GroupCommitAndPolicies(t *testing.T) {
	ctx := ctxT(t)
	run := func(policy equeue.SyncPolicy, override *equeue.SyncPolicy, sends int, concurrent bool) (writes, syncs int64) {
		cs := &countingStore{Store: store.NewMemory()}
		e, err := equeue.Open("", &equeue.Options{Store: cs, Sync: policy})
		require.NoError(t, err)
		defer func() { require.NoError(t, e.Close()) }()
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		p := newProducer(t, e, &equeue.ProducerOptions{Sync: override})
		w0, s0 := cs.writes.Load(), cs.syncs.Load()
		var wg sync.WaitGroup
		for range sends {
			if concurrent {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
					assert.NoError(t, err)
				}()
			} else {
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
				require.NoError(t, err)
			}
		}
		wg.Wait()
		return cs.writes.Load() - w0, cs.syncs.Load() - s0
	}
	w, s := run(equeue.SyncAlways, nil, 20, false)
	assert.Equal(t, int64(20), w)
	assert.Equal(t, int64(20), s, "SyncAlways: one sync per sequential send")

	w, s = run(equeue.SyncNever, nil, 20, false)
	assert.Equal(t, int64(20), w)
	assert.Zero(t, s, "SyncNever never syncs")

	_, s = run(equeue.SyncNever, &equeue.SyncAlways, 5, false)
	assert.Equal(t, int64(5), s, "a producer can ask for SyncAlways on a SyncNever engine")

	_, s = run(equeue.SyncAlways, &equeue.SyncNever, 5, false)
	assert.Zero(t, s, "a producer can opt out of syncing")

	// Group commit: many concurrent senders share writes and syncs. A slow
	// sync makes the batching certain rather than likely.
	slow := &slowSyncStore{countingStore: countingStore{Store: store.NewMemory()}, delay: 5 * time.Millisecond}
	e, err := equeue.Open("", &equeue.Options{Store: slow})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	require.NoError(t, e.Close())
	assert.Less(t, slow.syncs.Load(), int64(100), "200 concurrent sends must share fsyncs")
	assert.Less(t, slow.writes.Load(), int64(100), "200 concurrent sends must share store writes")

	// SyncInterval syncs in the background.
	cs := &countingStore{Store: store.NewMemory()}
	e, err = equeue.Open("", &equeue.Options{Store: cs, Sync: equeue.SyncInterval(10 * time.Millisecond)})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	s0 := cs.syncs.Load()
	p = newProducer(t, e, nil)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 5*time.Second, func() bool { return cs.syncs.Load() > s0+2 }, "interval syncs")
}

type slowSyncStore struct {
	countingStore
	delay time.Duration
}

func (s *slowSyncStore) Sync() error {
	time.Sleep(s.delay)
	return s.countingStore.Sync()
}

func TestAppend_WriteErrorLeavesNoGap(t *testing.T) {
	ctx := ctxT(t)
	cs := &countingStore{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: cs})
	require.NoError(t, err)
	defer e.Close()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("0")})
	require.NoError(t, err)
	cs.failNext.Store(1)
	_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("lost")})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errInjected))
	r, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("1")})
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Offset, "a failed write takes no offset")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t"})
	require.NoError(t, err)
	require.Len(t, res.Messages, 2)
	assert.Equal(t, "1", string(res.Messages[1].Body))
}

// A producer whose cached route still lists a queue that was closed to
// producers retries once on a fresh route, for SendAsync as for Send.
func TestProducer_StaleRouteRetriedBySendAndSendAsync(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	first := equeue.QueueSelectorFunc(func(_ *equeue.Message, w []int) int { return w[0] })
	p := newProducer(t, e, &equeue.ProducerOptions{Selector: first})
	r, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("warm")})
	require.NoError(t, err)
	require.Equal(t, 0, r.Queue, "the route is cached with both queues open")

	require.NoError(t, e.SetQueueWritable(ctx, "t", 0, false))
	f := p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: []byte("async")})
	res, err := f.Result(ctx)
	require.NoError(t, err)
	assert.Equal(t, 1, res.Queue)

	require.NoError(t, e.SetQueueWritable(ctx, "t", 0, true))
	require.NoError(t, e.SetQueueWritable(ctx, "t", 1, false))
	r, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("sync")})
	require.NoError(t, err)
	assert.Equal(t, 0, r.Queue)
	assert.Len(t, queueBodies(t, e, "t", 1), 1, "the refused attempt stored nothing")
}
