package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/crashsim"
	"github.com/equeue-go/equeue/internal/testport"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// TestStats_EngineCounters: stats shows the IDs a dedup window holds, on a
// directory and of a served broker, and a served broker's counters since
// it started.
func TestStats_EngineCounters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ok(t, "--dir", dir, "topic", "create", "d", "--queues", "1", "--dedup-window", "10m")
	for _, id := range []string{"a", "b", "c", "a"} {
		ok(t, "--dir", dir, "produce", "d", "body-"+id, "--id", id)
	}
	st := decode[statsJSON](t, ok(t, "--dir", dir, "stats", "--json"))
	if st.Engine == nil || st.Engine.DedupIDs != 3 || st.Messages != 3 {
		t.Fatalf("stats --dir: %+v (engine %+v)", st, st.Engine)
	}
	if out := ok(t, "--dir", dir, "stats"); !strings.Contains(out, "dedup IDs held:") || strings.Contains(out, "no-space refusals:") {
		t.Fatalf("stats --dir: %q", out)
	}

	addr := freePort(t)
	srv := startServe(t, "--dir", dir, "--listen", addr)
	eventually(t, 20*time.Second, "serve answers", func() bool {
		if srv.exited() {
			t.Fatalf("serve exited early: %v\n%s", srv.err, srv.stderr)
		}
		return cli(t, "--server", addr, "topic", "list").code == 0
	})
	ok(t, "--server", addr, "produce", "d", "body-e", "--id", "e")
	st = decode[statsJSON](t, ok(t, "--server", addr, "stats", "--json"))
	if st.Engine == nil || st.Engine.DedupIDs != 4 || st.StoreBytes == nil || *st.StoreBytes <= 0 {
		t.Fatalf("stats --server: %+v (engine %+v)", st, st.Engine)
	}
	out := ok(t, "--server", addr, "stats")
	for _, want := range []string{"dedup IDs held:", "corrupt records seen:", "expired messages seen:", "no-space refusals:"} {
		if !strings.Contains(out, want) {
			t.Fatalf("stats --server: no %q in %q", want, out)
		}
	}
	if code := srv.stop(t); code != 0 {
		t.Fatalf("serve exited %d", code)
	}
}

// TestStats_ReadOnlyOpensDedupStateOfACrashOrAnOlderVersion: a read-only
// command opens a directory whose dedup window lost a group to a machine
// crash (the group's bytes cut from Badger's value log), and one whose
// window is still in the format before groups, which it cannot move: it
// holds those IDs in memory and leaves them for a command that writes
// (found by review: both failed to open).
func TestStats_ReadOnlyOpensDedupStateOfACrashOrAnOlderVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("lost group", func(t *testing.T) {
		dir := t.TempDir()
		e, err := equeue.Open(dir, nil)
		require.NoError(t, err)
		require.NoError(t, e.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
		for i := range 20 {
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: fmt.Sprintf("%01500d", i), Body: []byte("x")}}})
			require.NoError(t, err)
		}
		require.NoError(t, e.Close())
		crashsim.CutValueLogTail(t, dir, 20*3000, 3300) // the long IDs' groups are in the value log

		st := decode[statsJSON](t, ok(t, "--dir", dir, "stats", "--json"))
		require.NotNil(t, st.Engine)
		assert.Less(t, st.Engine.DedupIDs, int64(20), "the lost group's ID is forgotten")
		assert.GreaterOrEqual(t, st.Engine.DedupIDs, int64(10))
		assert.Equal(t, uint64(20-st.Engine.DedupIDs), st.Engine.LostDedupGroups, "one group per lost ID, counted")
		assert.Contains(t, ok(t, "--dir", dir, "stats"), "dedup groups lost:")
	})
	t.Run("former format", func(t *testing.T) {
		dir := t.TempDir()
		e, err := equeue.Open(dir, nil)
		require.NoError(t, err)
		require.NoError(t, e.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
		require.NoError(t, e.Close())
		s, err := store.OpenBadger(dir, nil)
		require.NoError(t, err)
		var meta []store.MetaOp
		for i := range 30 {
			k := binary.BigEndian.AppendUint32([]byte("u/"), 1) // the first topic's ID is 1
			v := binary.BigEndian.AppendUint32(nil, 0)
			v = binary.BigEndian.AppendUint64(v, uint64(i))
			v = binary.BigEndian.AppendUint64(v, uint64(time.Now().UnixNano()))
			meta = append(meta, store.MetaOp{Key: fmt.Appendf(k, "id-%d", i), Value: v})
		}
		require.NoError(t, s.Write(&store.Batch{Meta: meta}))
		require.NoError(t, s.Close())
		formerKeys := func() int {
			s, err := store.OpenBadger(dir, nil)
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			n := 0
			require.NoError(t, s.ScanMeta([]byte("u/"), func(_, _ []byte) error { n++; return nil }))
			return n
		}

		st := decode[statsJSON](t, ok(t, "--dir", dir, "stats", "--json"))
		require.NotNil(t, st.Engine)
		assert.Equal(t, int64(30), st.Engine.DedupIDs)
		assert.Equal(t, 30, formerKeys(), "a read-only command changes nothing")
		out := ok(t, "--dir", dir, "produce", "d", "again", "--id", "id-7")
		assert.Contains(t, out, "duplicate")
		assert.Zero(t, formerKeys(), "a command that writes moves them into groups")
	})
}

// TestStats_ReplyTopicsAreNotUserTopics: the reply topics of requesters
// (one per requesting producer, of the default namespace or of one) are
// counted apart from the user's topics, as retry and dead-letter topics
// are.
func TestStats_ReplyTopicsAreNotUserTopics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	e, err := equeue.Open(dir, nil)
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "orders", 1))
	for _, name := range []string{equeue.ReplyTopicPrefix + "r1", equeue.ReplyTopicPrefix + "tenant:r2"} {
		_, err := e.Route(ctx, name) // what a requester's first Request does
		require.NoError(t, err)
	}
	require.NoError(t, e.Close())

	st := decode[statsJSON](t, ok(t, "--dir", dir, "stats", "--json"))
	assert.Equal(t, 1, st.Topics, "user topics")
	assert.Equal(t, 0, st.InternalTopics, "retry and dead-letter topics")
	assert.Equal(t, 2, st.ReplyTopics, "reply topics")
	assert.Equal(t, 3, st.Queues, "every topic's queues")
	assert.Contains(t, ok(t, "--dir", dir, "stats"), "1 (+0 retry/dead-letter, +2 reply)")
}

// hookPanicsEngine is an engine whose Stats report hook panics, as a broker
// with in-process consumers whose hooks panicked does.
type hookPanicsEngine struct{ *equeue.Engine }

func (e hookPanicsEngine) Stats() equeue.Stats {
	st := e.Engine.Stats()
	st.ConsumerHookPanics = 3
	return st
}

// TestStats_ConsumerHookPanicsOfAServedBroker: stats --server shows the
// broker's consumer hook panics (in JSON always, as a row when not zero).
func TestStats_ConsumerHookPanicsOfAServedBroker(t *testing.T) {
	t.Parallel()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	srv, err := remote.NewBackendServer(hookPanicsEngine{e}, nil)
	require.NoError(t, err)
	lis := testport.Listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		require.NoError(t, <-served)
	}()
	addr := lis.Addr().String()

	st := decode[statsJSON](t, ok(t, "--server", addr, "stats", "--json"))
	require.NotNil(t, st.Engine)
	assert.Equal(t, uint64(3), st.Engine.ConsumerHookPanics)
	assert.Contains(t, ok(t, "--server", addr, "stats"), "consumer hook panics:")
}

// TestStats_DeletedTopicRetriesApartFromExpired: the retry copies of a
// deleted topic that a group's pull skipped are a served broker's
// deleted-topic retries, not its expired messages, and --scan counts the
// copies it passes apart from expired messages too.
func TestStats_DeletedTopicRetriesApartFromExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	// Group g sends a message of "t" back to its retry topic; "t" is
	// deleted; g's pull of the retry topic skips the copy.
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("old")}}})
	require.NoError(t, err)
	retry := equeue.RetryTopic("g")
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", From: equeue.ConsumeFromEarliest,
		Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: retry}}})
	require.NoError(t, err)
	grants := map[string]equeue.Grant{}
	for _, q := range a.Queues {
		grants[q.Topic] = q
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: grants["t"].Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grants["t"], Offset: 0, Attempts: 1, Cause: "failed"})
	require.NoError(t, err)
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	res, err = e.Pull(ctx, &equeue.PullRequest{Topic: retry, Queue: grants[retry].Queue, Group: "g", Member: "m", Epoch: grants[retry].Epoch})
	require.NoError(t, err)
	require.Equal(t, 1, res.DeletedTopicRetries)

	srv, err := remote.NewBackendServer(e, nil)
	require.NoError(t, err)
	lis := testport.Listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		require.NoError(t, <-served)
	}()
	addr := lis.Addr().String()

	st := decode[statsJSON](t, ok(t, "--server", addr, "stats", "--scan", "--json"))
	require.NotNil(t, st.Engine)
	assert.Equal(t, uint64(1), st.Engine.DeletedTopicRetries)
	assert.Zero(t, st.Engine.ExpiredMessages)
	require.NotNil(t, st.Scan)
	assert.Equal(t, int64(1), st.Scan.DeletedTopicRetries, "the scan passes the copy as a retry of a deleted topic")
	assert.Zero(t, st.Scan.Expired)
	out := ok(t, "--server", addr, "stats", "--scan")
	assert.Contains(t, out, "retry copies of deleted topics skipped:")
	assert.Contains(t, out, "retry copies of deleted topics:")
}

// parkedEngine is an engine whose Stats report parked delayed messages, as
// a broker opened again on a store with smaller writes does.
type parkedEngine struct{ *equeue.Engine }

func (e parkedEngine) Stats() equeue.Stats {
	st := e.Engine.Stats()
	st.ParkedDelayedMessages = 2
	return st
}

// TestStats_ParkedDelayedMessagesOfAServedBroker: stats --server shows the
// broker's delayed messages stuck as too large to move (in JSON always, as
// a row when not zero), which only a reopen on a store that takes them
// moves.
func TestStats_ParkedDelayedMessagesOfAServedBroker(t *testing.T) {
	t.Parallel()
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	srv, err := remote.NewBackendServer(parkedEngine{e}, nil)
	require.NoError(t, err)
	lis := testport.Listen(t)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	defer func() {
		srv.Stop()
		require.NoError(t, <-served)
	}()
	addr := lis.Addr().String()

	st := decode[struct {
		Engine map[string]any `json:"engine"`
	}](t, ok(t, "--server", addr, "stats", "--json"))
	assert.EqualValues(t, 2, st.Engine["parked_delayed_messages"])
	assert.Contains(t, ok(t, "--server", addr, "stats"), "delayed messages parked:")
}
