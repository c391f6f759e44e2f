package remote_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
	pb "github.com/equeue-go/equeue/remote/equeuepb"
	"github.com/equeue-go/equeue/store"
)

// storedMix appends to queue 0 of topic t messages with every field a
// record keeps: engine and producer IDs, tags, keys, properties, sys
// properties, TTLs, empty and large bodies; one in five expires at once.
func storedMix(t *testing.T, b equeue.Broker) {
	t.Helper()
	ctx := ctxT(t)
	var msgs []*equeue.Message
	for i := range 40 {
		m := &equeue.Message{Topic: "t", Tag: []string{"A", "B", ""}[i%3], Body: fmt.Appendf(nil, "body %d", i),
			BornAt: time.Unix(1_700_000_000, int64(i))}
		switch i % 8 {
		case 1:
			m.ID = fmt.Sprintf("producer-%d", i)
		case 2:
			m.Keys = []string{"k1", "", "k2"}
			m.Properties = map[string]string{"a": "1", "": "empty key"}
		case 3:
			m.Body = nil
		case 4:
			m.Body = bytes.Repeat([]byte{byte(i)}, 70_000)
		case 5:
			m.SetSysProperties(map[string]string{equeue.SysReplyTo: "%REPLY%elsewhere"})
		case 6:
			m.TTL = time.Hour
		}
		if i%5 == 0 {
			m.TTL = time.Millisecond
		}
		msgs = append(msgs, m)
	}
	_, err := b.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	time.Sleep(5 * time.Millisecond) // the short TTLs run out
}

// A remote pull returns the very messages an in-process pull does, every
// field, now that the broker sends them as stored: through the direct
// decoder (Pull), protobuf's (PullMany's items) and the read-ahead of a
// consumer's fetches, with filters that skip messages and answers trimmed
// to the client's limit. The engine is on Badger, so the records are read
// from disk after a reopen too.
func TestStoredAnswer_RemoteSameAsInProcess(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	e, err := equeue.Open("", &equeue.Options{Store: st})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	storedMix(t, e)
	require.NoError(t, e.Close())
	e = openEngine(t, &equeue.Options{Store: reopenBadger(t, dir)})
	s := startServer(t, e, "", nil)
	// A limit of 200 KB: answers with two or more 70 KB bodies are trimmed.
	c := dial(t, s.addr, &remote.ClientOptions{MaxMessageBytes: 200_000})
	api := pb.NewBrokerClient(rawConn(t, s.addr))

	for _, filter := range []string{"*", "A || B", "B"} {
		var inproc, direct, many []*equeue.Message
		read := func(pull func(off int64) equeue.PullResult, into *[]*equeue.Message) {
			t.Helper()
			for off := int64(0); off < 40; {
				res := pull(off)
				require.Greater(t, res.NextOffset, off)
				*into = append(*into, res.Messages...)
				off = res.NextOffset
			}
		}
		read(func(off int64) equeue.PullResult {
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 32, Filter: filter})
			require.NoError(t, err)
			return res
		}, &inproc)
		read(func(off int64) equeue.PullResult {
			res, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 32, Filter: filter})
			require.NoError(t, err)
			return res
		}, &direct)
		read(func(off int64) equeue.PullResult {
			resp, err := api.PullMany(ctx, &pb.PullManyRequest{MaxAnswerBytes: 200_000, Pulls: []*pb.PullRequest{
				{Topic: "t", Offset: off, Max: 32, Filter: filter, StoredBatchVersion: equeue.StoredBatchVersion}}})
			require.NoError(t, err)
			r := resp.GetItems()[0].GetResponse()
			require.NotNil(t, r)
			if r.GetStatus() == pb.PullStatus_PULL_STATUS_FOUND {
				require.NotEmpty(t, r.GetStored(), "a found answer carries a stored batch")
				require.Empty(t, r.GetMessages())
			}
			res := equeue.PullResult{NextOffset: r.GetNextOffset()}
			if len(r.GetStored()) > 0 {
				res.Messages, err = equeue.DecodeStoredBatch(r.GetStored())
				require.NoError(t, err)
			}
			return res
		}, &many)
		require.NotEmpty(t, inproc)
		require.Equal(t, inproc, direct, "filter %q: Pull", filter)
		require.Equal(t, inproc, many, "filter %q: PullMany", filter)
	}

	// A consumer (its fetches read ahead) handles every message, as sent.
	col := newCollector()
	startConsumer(t, c, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, Handler: col.handler("c")})
	eventually(t, 10*time.Second, func() bool { return col.count() == 32 }, "8 of 40 expired; the rest handled")
}

// reopenBadger opens the Badger store in dir again.
func reopenBadger(t *testing.T, dir string) equeue.Store {
	t.Helper()
	st, err := store.OpenBadger(dir, nil)
	require.NoError(t, err)
	return st
}

// A client that reads no stored batches (one older than them) gets
// messages; one that reads them, or a newer version of them, gets the
// batch of this build's version. Both decode to the same messages.
func TestStoredAnswer_OnlyToClientsThatReadIt(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	storedMix(t, e)
	s := startServer(t, e, "", nil)
	api := pb.NewBrokerClient(rawConn(t, s.addr))
	pull := func(version int32) *pb.PullResponse {
		resp, err := api.Pull(ctx, &pb.PullRequest{Topic: "t", Max: 32, StoredBatchVersion: version})
		require.NoError(t, err)
		return resp
	}
	old := pull(0)
	require.NotEmpty(t, old.GetMessages())
	assert.Empty(t, old.GetStored())
	want, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 32})
	require.NoError(t, err)
	require.Len(t, old.GetMessages(), len(want.Messages))
	for i, m := range old.GetMessages() {
		assert.Equal(t, want.Messages[i].ID, m.GetId())
		assert.Equal(t, want.Messages[i].Offset, m.GetOffset())
	}
	for _, version := range []int32{equeue.StoredBatchVersion, equeue.StoredBatchVersion + 5} {
		resp := pull(version)
		assert.Empty(t, resp.GetMessages(), "version %d", version)
		require.NotEmpty(t, resp.GetStored(), "version %d", version)
		assert.Equal(t, byte(equeue.StoredBatchVersion), resp.GetStored()[0], "the batch is this build's version")
		msgs, err := equeue.DecodeStoredBatch(resp.GetStored())
		require.NoError(t, err)
		assert.Equal(t, want.Messages, msgs)
		assert.Equal(t, old.GetNextOffset(), resp.GetNextOffset())
		assert.Equal(t, old.GetMaxOffset(), resp.GetMaxOffset())
		assert.Equal(t, old.GetExpired(), resp.GetExpired())
	}
}

// A namespace renames its topics, so its pulls are answered with messages,
// never with the stored records (which hold the qualified names): a
// message's origin topic reads as the namespace's own name.
func TestStoredAnswer_NamespaceAnswersWithMessages(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	s := namespaceServer(t, e)
	a := dial(t, s.addr, &remote.ClientOptions{Token: "tok-a"})
	require.NoError(t, a.CreateTopic(ctx, "t", 1))
	storedMix(t, a)
	api := pb.NewBrokerClient(rawConn(t, s.addr))
	actx := metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer tok-a")
	resp, err := api.Pull(actx, &pb.PullRequest{Topic: "t", Max: 32, StoredBatchVersion: equeue.StoredBatchVersion})
	require.NoError(t, err)
	assert.Empty(t, resp.GetStored())
	require.NotEmpty(t, resp.GetMessages())
	for _, m := range resp.GetMessages() {
		assert.Equal(t, "t", m.GetTopic())
	}
	res, err := a.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 32})
	require.NoError(t, err)
	require.NotEmpty(t, res.Messages)
	for _, m := range res.Messages {
		assert.Equal(t, "t", m.Topic)
	}
}

// damagingStore corrupts, as it hands them out, the records at the offsets
// in damage (a flipped body byte, which their checksum catches), and fails
// every Read while failReads is set.
type damagingStore struct {
	equeue.Store
	damage    map[uint64]bool
	failReads atomic.Bool
}

var errReadFailed = errors.New("injected read failure")

func (s *damagingStore) Read(q store.QueueID, from, to uint64, max, maxBytes int) ([]store.Record, error) {
	if s.failReads.Load() {
		return nil, errReadFailed
	}
	recs, err := s.Store.Read(q, from, to, max, maxBytes)
	for i, r := range recs {
		if s.damage[r.Offset] && len(r.Value) > 0 {
			v := bytes.Clone(r.Value)
			v[len(v)-1] ^= 0xff
			recs[i].Value = v
		}
	}
	return recs, err
}

// Records the store hands out damaged are skipped and reported (Corrupt)
// over the wire as in-process, the records around them arrive intact in
// the stored batch, and a store read that fails fails the remote pull with
// an error, not a wrong answer; once reads work again the same pull
// answers as before.
func TestStoredAnswer_DamagedRecordsAndFailedReads(t *testing.T) {
	ctx := ctxT(t)
	ds := &damagingStore{Store: store.NewMemory(), damage: map[uint64]bool{3: true, 4: true, 17: true}}
	e := openEngine(t, &equeue.Options{Store: ds})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	storedMix(t, e)
	s := startServer(t, e, "", nil)
	c := dial(t, s.addr, nil)
	api := pb.NewBrokerClient(rawConn(t, s.addr))

	var inproc, over []*equeue.Message
	var inCorrupt, overCorrupt []int64
	for off := int64(0); off < 40; {
		want, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 8})
		require.NoError(t, err)
		got, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 8})
		require.NoError(t, err)
		require.Equal(t, want.NextOffset, got.NextOffset)
		require.Equal(t, want.Expired, got.Expired)
		inproc, over = append(inproc, want.Messages...), append(over, got.Messages...)
		inCorrupt, overCorrupt = append(inCorrupt, want.Corrupt...), append(overCorrupt, got.Corrupt...)
		raw, err := api.Pull(ctx, &pb.PullRequest{Topic: "t", Offset: off, Max: 8, StoredBatchVersion: equeue.StoredBatchVersion})
		require.NoError(t, err)
		if len(got.Messages) > 0 {
			assert.NotEmpty(t, raw.GetStored(), "offset %d: answered with a stored batch", off)
		}
		off = got.NextOffset
	}
	assert.Equal(t, []int64{3, 4, 17}, inCorrupt)
	assert.Equal(t, inCorrupt, overCorrupt)
	require.Equal(t, inproc, over)
	for _, m := range over {
		assert.NotContains(t, []int64{3, 4, 17}, m.Offset)
	}

	ds.failReads.Store(true)
	_, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 8})
	require.Error(t, err, "a failed store read fails the pull")
	ds.failReads.Store(false)
	again, err := c.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 8})
	require.NoError(t, err)
	assert.Equal(t, over[:len(again.Messages)], again.Messages)
}

// Stored answers crossed with the other features, over a server with
// rights: a consume-only token pulls stored batches but cannot append; a
// duplicate in a dedup window is not stored twice; a delayed message
// arrives in a later pull, with its delivery time; retention deleting the
// head moves the offset as in-process; and a message that fails once comes
// back through the retry topic (its origin in sys properties, read from the
// stored record) and is handled again. At every step a remote pull returns
// what an in-process pull does.
func TestStoredAnswer_CrossesFeatures(t *testing.T) {
	ctx := ctxT(t)
	e := openEngine(t, nil)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	s := startServer(t, e, "", &remote.ServerOptions{Tokens: map[string]remote.Rights{
		"p": remote.RightProduce, "c": remote.RightConsume}})
	prod := dial(t, s.addr, &remote.ClientOptions{Token: "p"})
	cons := dial(t, s.addr, &remote.ClientOptions{Token: "c"})

	same := func(from int64) {
		t.Helper()
		for off := from; ; {
			want, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 4})
			require.NoError(t, err)
			got, err := cons.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 4})
			require.NoError(t, err)
			require.Equal(t, want, got, "offset %d", off)
			if got.Status == equeue.PullNoNewMessage {
				return
			}
			off = got.NextOffset
		}
	}
	_, err := cons.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Topic: "t", Body: []byte("x")}}})
	require.ErrorIs(t, err, remote.ErrPermissionDenied, "a consume-only token cannot append")

	send := func(m *equeue.Message) equeue.AppendResult {
		t.Helper()
		m.Topic = "t"
		r, err := prod.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{m}})
		require.NoError(t, err)
		return r
	}
	first := send(&equeue.Message{ID: "once", Body: []byte("original")})
	dup := send(&equeue.Message{ID: "once", Body: []byte("duplicate")})
	assert.True(t, dup.Duplicate, "the second send is a duplicate")
	assert.Equal(t, first.FirstOffset, dup.FirstOffset)
	for i := range 6 {
		send(&equeue.Message{Tag: "A", Body: fmt.Appendf(nil, "m%d", i)})
	}
	// Compared before the delayed message is sent: its move, due 50 ms
	// later, landed between the two pulls of a comparison on a loaded
	// machine (MaxOffset 7 in process, 8 remote).
	same(0)
	send(&equeue.Message{Body: []byte("delayed"), Delay: 50 * time.Millisecond})
	// The move comes from the engine's own timer: on a starved machine it
	// may be seconds late.
	eventually(t, 30*time.Second, func() bool {
		ti, err := e.Topic(ctx, "t")
		return err == nil && ti.Messages == 8
	}, "the delayed message moved into the queue")
	same(0)
	// The delayed message lands after the six, sent before it.
	res, err := cons.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 1, Max: 16})
	require.NoError(t, err)
	require.Len(t, res.Messages, 7)
	i := slices.IndexFunc(res.Messages, func(m *equeue.Message) bool { return string(m.Body) == "delayed" })
	require.GreaterOrEqual(t, i, 0, "the delayed message is in the queue")
	assert.False(t, res.Messages[i].DeliverAt.IsZero(), "its delivery time is in the record")

	// Retention deletes the head: a pull below it moves, as in-process.
	_, err = e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Nanosecond})
	require.NoError(t, err)
	moved, err := cons.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 4})
	require.NoError(t, err)
	want, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 4})
	require.NoError(t, err)
	assert.Equal(t, want, moved)
	assert.Equal(t, equeue.PullOffsetMoved, moved.Status)
	send(&equeue.Message{Tag: "A", Body: []byte("after retention")})
	same(moved.NextOffset)

	// A remote consumer with a consume-only token: one message fails once,
	// goes through the retry topic and is handled again.
	var mu sync.Mutex
	handled := map[string]int{}
	var retried *equeue.Message
	startConsumer(t, cons, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		From: equeue.ConsumeFromEarliest, RetryTopicDelays: []time.Duration{10 * time.Millisecond},
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			handled[string(m.Body)]++
			if string(m.Body) == "after retention" && handled[string(m.Body)] == 1 {
				return errors.New("fail once")
			}
			if m.Attempt > 0 {
				retried = m
			}
			return nil
		}})
	eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return handled["after retention"] == 2
	}, "the failed message handled again")
	mu.Lock()
	defer mu.Unlock()
	require.NotNil(t, retried)
	assert.Equal(t, "t", retried.Topic, "the retried message reads as its origin topic")
	assert.Equal(t, 1, retried.Attempt)
}
