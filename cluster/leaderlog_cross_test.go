package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// The leader's background log write crossed with what the engine builds on
// a stored write: dedup entries, delayed messages and retention trims. A
// caller's answer — stored (nil), not stored (ErrNotLeader) or unknown
// (ErrIndeterminate) — must never be contradicted by what the nodes keep.

// failLog is a Raft log store that stores nothing and fails every write
// once failWith is set: a disk that stopped taking writes.
type failLog struct {
	raft.LogStore
	failWith atomic.Pointer[error]
}

func (f *failLog) StoreLogs(logs []*raft.Log) error {
	if p := f.failWith.Load(); p != nil {
		return *p
	}
	return f.LogStore.StoreLogs(logs)
}

func (f *failLog) StoreLog(l *raft.Log) error { return f.StoreLogs([]*raft.Log{l}) }

func (f *failLog) fail(err error) { f.failWith.Store(&err) }

// errDiskGone is the write failure the tests inject.
var errDiskGone = errors.New("test: the disk took no more writes")

// faultCluster is a test cluster whose nodes' Raft logs can be held (a
// slow write) and made to fail, node by node.
type faultCluster struct {
	*testCluster
	mu    sync.Mutex
	held  map[string]*heldLog // node ID -> the log of its latest opening
	fails map[string]*failLog
}

func newFaultCluster(t *testing.T, mod func(*cluster.Options)) *faultCluster {
	fc := &faultCluster{held: map[string]*heldLog{}, fails: map[string]*failLog{}}
	fc.testCluster = newCluster(t, 3, func(o *cluster.Options) {
		if mod != nil {
			mod(o)
		}
		id := o.ID
		cluster.SetLogStoreHook(o, func(s raft.LogStore) raft.LogStore {
			f := &failLog{LogStore: s}
			h := &heldLog{LogStore: f} // held first, then failed or stored
			fc.mu.Lock()
			fc.held[id], fc.fails[id] = h, f
			fc.mu.Unlock()
			return h
		})
	})
	return fc
}

func (fc *faultCluster) logOf(n *cluster.Node) (*heldLog, *failLog) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.held[n.ID()], fc.fails[n.ID()]
}

func (fc *faultCluster) indexOf(n *cluster.Node) int {
	for i, m := range fc.nodes {
		if m == n {
			return i
		}
	}
	fc.t.Fatalf("%s is not running", n.ID())
	return -1
}

// holdLeader holds the leader's log write and returns the first command
// entry that waits there, once every follower holds it and Raft counts it
// committed: from then on only the leader's own write is missing.
func (fc *faultCluster) holdLeader(leader *cluster.Node) uint64 {
	fc.t.Helper()
	held, _ := fc.logOf(leader)
	var index uint64
	eventually(fc.t, 10*time.Second, func() error {
		var ok bool
		if index, ok = held.firstBlocked(); !ok {
			return errors.New("the leader wrote nothing yet")
		}
		return nil
	})
	eventually(fc.t, 10*time.Second, func() error {
		for _, n := range fc.nodes {
			if n == nil {
				continue
			}
			if st := n.Status(); st.LastLogIndex < index {
				return fmt.Errorf("%s holds up to %d, not %d", st.ID, st.LastLogIndex, index)
			}
		}
		if st := leader.Status(); st.CommitIndex < index {
			return fmt.Errorf("raft commit index %d, not %d", st.CommitIndex, index)
		}
		return nil
	})
	return index
}

// whileHeld checks check for a while (the leader's write still held): a
// check that fails means something acted on the entry too early.
func whileHeld(t *testing.T, check func()) {
	t.Helper()
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		check()
	}
}

// noneApplied requires that no running node applied index.
func (fc *faultCluster) noneApplied(t *testing.T, index uint64) {
	t.Helper()
	for _, n := range fc.nodes {
		if n != nil {
			require.Less(t, cluster.StoredApplied(n), index, "%s applied entry %d before the leader stored it", n.ID(), index)
		}
	}
}

// notAnswered requires that nothing came on ch yet.
func notAnswered[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s was answered (%+v) before the leader stored it", what, v)
	default:
	}
}

// reopenBroken closes the node whose log write failed — its close says so
// — and opens it again.
func (fc *faultCluster) reopenBroken(i int) {
	fc.t.Helper()
	err := fc.nodes[i].Close()
	require.ErrorIs(fc.t, err, errDiskGone, "closing %s reports its failed log write", fc.id(i))
	fc.nodes[i] = nil
	fc.start(i, false)
}

// waitOtherLeader waits until a node other than failed serves: the node
// whose log write failed must not keep the cluster from serving.
func (fc *faultCluster) waitOtherLeader(failed *cluster.Node) {
	fc.t.Helper()
	eventually(fc.t, 30*time.Second, func() error {
		for _, n := range fc.nodes {
			if n != nil && n != failed && n.Status().Serving {
				return nil
			}
		}
		return fmt.Errorf("no node but the failed %s (%s) leads", failed.ID(), failed.Status().State)
	})
	require.False(fc.t, failed.Status().Serving, "the failed node serves")
}

type appendOutcome struct {
	res equeue.AppendResult
	err error
}

func sendAsync(n *cluster.Node, topic string, m *equeue.Message) <-chan appendOutcome {
	ch := make(chan appendOutcome, 1)
	go func() {
		res, err := n.Append(context.Background(), &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{m}})
		ch <- appendOutcome{res, err}
	}()
	return ch
}

// requireOutcome requires one of the three answers a caller may get.
func requireOutcome(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, equeue.ErrIndeterminate) && !errors.Is(err, equeue.ErrNotLeader) {
		t.Fatalf("answer neither stored, not stored nor unknown: %v", err)
	}
}

// resendUntilAnswered sends m to whichever node serves until one answers
// nil (refusals and unknown outcomes of a cluster still recovering are
// retried: m carries a dedup ID).
func (fc *faultCluster) resendUntilAnswered(topic string, m equeue.Message) equeue.AppendResult {
	fc.t.Helper()
	var res equeue.AppendResult
	eventually(fc.t, 30*time.Second, func() error {
		cp := m
		var err error
		res, err = fc.waitLeader().Append(context.Background(), &equeue.AppendRequest{Topic: topic, Messages: []*equeue.Message{&cp}})
		requireOutcome(fc.t.(*testing.T), err)
		return err
	})
	return res
}

// storedEverywhere closes every node and returns what each stores of
// topic, requiring that all store the same.
func (fc *faultCluster) storedEverywhere(t *testing.T, topic string) map[int][]string {
	t.Helper()
	fc.waitConverged()
	fc.closeAll()
	var first map[int][]string
	for i, dir := range fc.dirs {
		got := readAll(t, dir, topic)
		if i == 0 {
			first = got
			continue
		}
		require.Equal(t, first, got, "node %d stores what node 1 stores", i+1)
	}
	return first
}

// With the leader's log write held, a send to a dedup topic — and a
// second send of the same ID while the first is on its way — is answered
// only once the write is stored, the second as a duplicate of the first;
// a send after the release is a duplicate too, and every node keeps one
// copy. A duplicate answered early would say "stored" of an entry that a
// failed leader write could still lose.
func TestLeaderLog_DedupSendHeldIsAnsweredOnlyOnceStored(t *testing.T) {
	c := newFaultCluster(t, nil)
	leader := c.waitLeader()
	ctx := context.Background()
	require.NoError(t, leader.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "w", Body: []byte("w")}}})
	require.NoError(t, err)
	c.waitConverged()

	held, _ := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	first := sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a")})
	index := c.holdLeader(leader)
	second := sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a again")})
	whileHeld(t, func() {
		c.noneApplied(t, index)
		notAnswered(t, first, "the send")
		notAnswered(t, second, "the duplicate send")
	})
	held.setHeld(false)

	a := <-first
	require.NoError(t, a.err)
	assert.False(t, a.res.Duplicate)
	assert.Equal(t, int64(1), a.res.FirstOffset)
	b := <-second
	require.NoError(t, b.err)
	assert.True(t, b.res.Duplicate, "the second send is a duplicate")
	assert.Equal(t, a.res.FirstOffset, b.res.FirstOffset, "at the first's offset")
	again, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "a", Body: []byte("a once more")}}})
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, a.res.FirstOffset, again.FirstOffset)

	assert.Equal(t, map[int][]string{0: {"w", "a"}}, c.storedEverywhere(t, "d"))
}

// When the leader's write of a dedup send fails, the send (and a duplicate
// of it sent meanwhile) is not answered "stored"; the cluster recovers once
// the failed node is reopened, a re-send of the ID is answered in line
// with the first answers, and every node keeps exactly one copy.
func TestLeaderLog_DedupSendWhoseLeaderWriteFails(t *testing.T) {
	c := newFaultCluster(t, nil)
	leader := c.waitLeader()
	ctx := context.Background()
	require.NoError(t, leader.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "w", Body: []byte("w")}}})
	require.NoError(t, err)
	c.waitConverged()

	held, failing := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	first := sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a")})
	index := c.holdLeader(leader)
	second := sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a again")})
	whileHeld(t, func() {
		c.noneApplied(t, index)
		notAnswered(t, first, "the send")
		notAnswered(t, second, "the duplicate send")
	})
	failing.fail(errDiskGone)
	held.setHeld(false)

	var answers []appendOutcome
	for _, ch := range []<-chan appendOutcome{first, second} {
		select {
		case o := <-ch:
			requireOutcome(t, o.err)
			// The leader never stored the entry: it cannot have applied it.
			require.Error(t, o.err, "a send whose leader write failed answered stored: %+v", o.res)
			answers = append(answers, o)
		case <-time.After(30 * time.Second):
			t.Fatal("a send whose leader write failed is never answered")
		}
	}

	// A healthy node takes over while the failed one is still open.
	c.waitOtherLeader(leader)
	res := c.resendUntilAnswered("d", equeue.Message{ID: "a", Body: []byte("a after recovery")})
	c.reopenBroken(c.indexOf(leader))
	for _, o := range answers {
		if errors.Is(o.err, equeue.ErrNotLeader) {
			assert.False(t, res.Duplicate, "a send answered not stored (%v) was stored after all", o.err)
		}
	}
	stored := c.storedEverywhere(t, "d")
	require.Len(t, stored[0], 2, "w and one a: %q", stored[0])
	assert.Equal(t, "w", stored[0][0])
	assert.Contains(t, []string{"a", "a after recovery"}, stored[0][1])
	if res.Duplicate {
		assert.Equal(t, "a", stored[0][1], "a duplicate's original is kept")
	} else {
		assert.Equal(t, "a after recovery", stored[0][1])
	}
	assert.Equal(t, int64(1), res.FirstOffset)
}

// A duplicate sent while the first send's entry is on its way shares the
// first's fate. Here the entry reaches no follower (their disks refuse it
// for a while) and the leader's own write fails: the entry is lost, and
// the next message takes its offset. A duplicate answered "stored at
// offset 1" would be contradicted by what every node holds at offset 1.
func TestLeaderLog_DedupDuplicateOfALostSendIsNotAnsweredStored(t *testing.T) {
	c := newFaultCluster(t, nil)
	leader := c.waitLeader()
	ctx := context.Background()
	require.NoError(t, leader.CreateTopicWith(ctx, "d", equeue.TopicOptions{Queues: 1, DedupWindow: time.Hour}))
	_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "d", Messages: []*equeue.Message{{ID: "w", Body: []byte("w")}}})
	require.NoError(t, err)
	c.waitConverged()

	var followers []*failLog
	for _, n := range c.nodes {
		if n != leader {
			_, f := c.logOf(n)
			f.fail(errDiskGone)
			followers = append(followers, f)
		}
	}
	held, failing := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	first := sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a")})
	eventually(t, 10*time.Second, func() error {
		if _, ok := held.firstBlocked(); !ok {
			return errors.New("the leader wrote nothing yet")
		}
		return nil
	})
	second := sendAsync(leader, "d", &equeue.Message{ID: "a", Body: []byte("a again")})
	whileHeld(t, func() {
		notAnswered(t, first, "the send")
		notAnswered(t, second, "the duplicate send")
	})
	failing.fail(errDiskGone)
	held.setHeld(false)
	for _, ch := range []<-chan appendOutcome{first, second} {
		select {
		case o := <-ch:
			requireOutcome(t, o.err)
			require.Error(t, o.err, "a send stored nowhere answered stored: %+v", o.res)
		case <-time.After(30 * time.Second):
			t.Fatal("a send whose leader write failed is never answered")
		}
	}
	for _, f := range followers {
		f.failWith.Store(nil)
	}
	c.waitOtherLeader(leader)
	b := c.resendUntilAnswered("d", equeue.Message{ID: "b", Body: []byte("b")})
	assert.Equal(t, int64(1), b.FirstOffset, "the lost entry's offset is taken again")
	a := c.resendUntilAnswered("d", equeue.Message{ID: "a", Body: []byte("a after recovery")})
	assert.False(t, a.Duplicate, "the lost send is not a duplicate")
	c.reopenBroken(c.indexOf(leader))
	assert.Equal(t, map[int][]string{0: {"w", "b", "a after recovery"}}, c.storedEverywhere(t, "d"))
}

// A delayed send whose entry is held is not delivered by any node before
// the leader's write is released — not even once its delay has passed —
// and is delivered exactly once after.
func TestLeaderLog_DelayedSendHeldIsDeliveredOnceAfterTheRelease(t *testing.T) {
	c := newFaultCluster(t, nil)
	leader := c.waitLeader()
	ctx := context.Background()
	require.NoError(t, leader.CreateTopic(ctx, "dl", 1))
	_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "dl", Messages: []*equeue.Message{{Body: []byte("w")}}})
	require.NoError(t, err)
	c.waitConverged()

	held, _ := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	const delay = 200 * time.Millisecond
	sent := sendAsync(leader, "dl", &equeue.Message{Body: []byte("later"), Delay: delay})
	index := c.holdLeader(leader)
	pulled := func() []string {
		res, err := leader.Pull(ctx, &equeue.PullRequest{Topic: "dl", Queue: 0, Offset: 0, Max: 10})
		require.NoError(t, err)
		var out []string
		for _, m := range res.Messages {
			out = append(out, string(m.Body))
		}
		return out
	}
	// Held for longer than the delay: still nothing to deliver.
	for range 2 {
		whileHeld(t, func() {
			c.noneApplied(t, index)
			notAnswered(t, sent, "the delayed send")
			require.Equal(t, []string{"w"}, pulled())
		})
	}
	held.setHeld(false)
	o := <-sent
	require.NoError(t, o.err)
	assert.True(t, o.res.Delayed)
	eventually(t, 10*time.Second, func() error {
		if got := pulled(); len(got) != 2 {
			return fmt.Errorf("pulled %q", got)
		}
		return nil
	})
	assert.Equal(t, []string{"w", "later"}, pulled(), "delivered once")
	assert.Equal(t, map[int][]string{0: {"w", "later"}}, c.storedEverywhere(t, "dl"))
}

// retentionSetup creates topic "r" with 50 messages older than the
// returned cut and 10 newer ones, and returns its store queue ID.
func retentionSetup(t *testing.T, c *faultCluster) (store.QueueID, time.Time) {
	t.Helper()
	leader := c.waitLeader()
	ctx := context.Background()
	require.NoError(t, leader.CreateTopic(ctx, "r", 1))
	batch := func(tag string, n int) {
		var ms []*equeue.Message
		for i := range n {
			ms = append(ms, &equeue.Message{Body: fmt.Appendf(nil, "%s-%d", tag, i)})
		}
		_, err := leader.Append(ctx, &equeue.AppendRequest{Topic: "r", Messages: ms})
		require.NoError(t, err)
	}
	batch("old", 50)
	time.Sleep(20 * time.Millisecond) // the old messages are older than the cut
	cut := time.Now()
	batch("new", 10)
	c.waitConverged()
	for id := range uint32(64) {
		q := store.QueueID{Topic: id}
		if _, next, ok, err := cluster.StoreOf(leader).Bounds(q); err == nil && ok && next == 60 {
			return q, cut
		}
	}
	t.Fatal("no queue of 60 records")
	return store.QueueID{}, cut
}

// bounds is where a node's copy of a queue starts: its low watermark (what
// an engine opened on it shows) and its first stored record.
type bounds struct{ watermark, firstRecord uint64 }

// firstOffsets returns where each running node's copy of q starts.
func (fc *faultCluster) firstOffsets(t *testing.T, q store.QueueID) map[string]bounds {
	t.Helper()
	out := map[string]bounds{}
	for _, n := range fc.nodes {
		if n == nil {
			continue
		}
		first, _, ok, err := cluster.StoreOf(n).Bounds(q)
		require.NoError(t, err)
		require.True(t, ok, "%s holds the queue", n.ID())
		w, err := cluster.Watermark(n, q)
		require.NoError(t, err)
		out[n.ID()] = bounds{w, first}
	}
	return out
}

func sameFirst(ids []string, first uint64) map[string]bounds {
	out := map[string]bounds{}
	for _, id := range ids {
		out[id] = bounds{first, first}
	}
	return out
}

func (fc *faultCluster) ids() []string {
	var out []string
	for i := range fc.nodes {
		out = append(out, fc.id(i))
	}
	return out
}

// A retention trim whose entry is held moves no node's first offset — nor
// the leader engine's low watermark — until the leader's write is
// released; then every node trims the same.
func TestLeaderLog_RetentionTrimHeldMovesNothingUntilStored(t *testing.T) {
	c := newFaultCluster(t, func(o *cluster.Options) {
		o.Engine = &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}}
	})
	q, cut := retentionSetup(t, c)
	leader := c.waitLeader()
	ctx := context.Background()
	e, err := leader.Engine()
	require.NoError(t, err)

	held, _ := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	type trim struct {
		res equeue.RetentionResult
		err error
	}
	done := make(chan trim, 1)
	go func() {
		res, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Since(cut) + 10*time.Millisecond})
		done <- trim{res, err}
	}()
	index := c.holdLeader(leader)
	whileHeld(t, func() {
		c.noneApplied(t, index)
		notAnswered(t, done, "the retention pass")
		require.Equal(t, sameFirst(c.ids(), 0), c.firstOffsets(t, q))
		info, err := leader.Topic(ctx, "r")
		require.NoError(t, err)
		require.Equal(t, int64(0), info.Queues[0].MinOffset, "the leader's low watermark")
	})
	held.setHeld(false)
	r := <-done
	require.NoError(t, r.err)
	assert.Equal(t, int64(50), r.res.Deleted)
	c.waitConverged()
	assert.Equal(t, sameFirst(c.ids(), 50), c.firstOffsets(t, q))
	c.checkTrimmedAlike(t, 50)
}

// checkTrimmedAlike closes every node and requires that each keeps topic
// "r" from want on, the same messages.
func (fc *faultCluster) checkTrimmedAlike(t *testing.T, want int64) {
	t.Helper()
	fc.waitConverged()
	fc.closeAll()
	var bodies0 []string
	for i, dir := range fc.dirs {
		first, bodies := readFrom(t, dir, "r", 0)
		assert.Equal(t, want, first, "node %d's low watermark", i+1)
		assert.Len(t, bodies, int(60-want), "node %d", i+1)
		if i == 0 {
			bodies0 = bodies
		} else {
			assert.Equal(t, bodies0, bodies, "node %d keeps what node 1 keeps", i+1)
		}
	}
}

// A retention trim whose leader write fails is not answered as done; no
// node trims while the failed node leads, and once it is reopened every
// node holds the same queue, trimmed or not as the answer allows.
func TestLeaderLog_RetentionTrimWhoseLeaderWriteFails(t *testing.T) {
	c := newFaultCluster(t, func(o *cluster.Options) {
		o.Engine = &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}}
	})
	q, cut := retentionSetup(t, c)
	leader := c.waitLeader()
	ctx := context.Background()
	e, err := leader.Engine()
	require.NoError(t, err)

	held, failing := c.logOf(leader)
	held.setHeld(true)
	defer held.setHeld(false)
	done := make(chan error, 1)
	go func() {
		_, err := e.ApplyRetention(ctx, equeue.RetentionPolicy{MaxAge: time.Since(cut) + 10*time.Millisecond})
		done <- err
	}()
	index := c.holdLeader(leader)
	whileHeld(t, func() {
		c.noneApplied(t, index)
		notAnswered(t, done, "the retention pass")
		require.Equal(t, sameFirst(c.ids(), 0), c.firstOffsets(t, q))
	})
	failing.fail(errDiskGone)
	held.setHeld(false)
	select {
	case err := <-done:
		requireOutcome(t, err)
		require.Error(t, err, "a trim whose leader write failed answered done")
	case <-time.After(30 * time.Second):
		t.Fatal("a trim whose leader write failed is never answered")
	}
	// The node that could not store the entry never applies it.
	whileHeld(t, func() {
		require.Less(t, cluster.StoredApplied(leader), index)
		first, _, _, err := cluster.StoreOf(leader).Bounds(q)
		require.NoError(t, err)
		require.Zero(t, first)
		w, err := cluster.Watermark(leader, q)
		require.NoError(t, err)
		require.Zero(t, w)
	})

	c.waitOtherLeader(leader)
	c.reopenBroken(c.indexOf(leader))
	c.waitConverged()
	firsts := c.firstOffsets(t, q)
	// The followers held the trim in their logs: a new leader may commit
	// it (the caller was told "unknown"), but then on every node.
	want := firsts[c.id(0)].watermark
	require.Contains(t, []uint64{0, 50}, want)
	assert.Equal(t, sameFirst(c.ids(), want), firsts)
	c.checkTrimmedAlike(t, int64(want))
}
