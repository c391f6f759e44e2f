package equeue_test

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// heldSyncStore copies the store's directory at the first Sync that
// succeeds once armed, as a power loss right after that fsync leaves it,
// and holds that Sync until released, so that the test can have writes
// made after the fsync and before the durable send's trim. It tells of
// every write after the copy that carries a record holding a marker.
type heldSyncStore struct {
	equeue.Store
	dir, to string
	armed   atomic.Bool
	copied  chan error    // the copy's outcome, once
	release chan struct{} // closed to let the held Sync return
	after   atomic.Bool   // the copy was taken
	mu      sync.Mutex
	written [][]byte // values of the records written after the copy
}

func (s *heldSyncStore) Sync() error {
	err := s.Store.Sync()
	if err == nil && s.armed.CompareAndSwap(true, false) {
		cerr := copyFlatDir(s.dir, s.to)
		s.after.Store(true)
		s.copied <- cerr
		<-s.release
	}
	return err
}

func (s *heldSyncStore) Write(b *store.Batch) error {
	err := s.Store.Write(b)
	if err == nil && s.after.Load() {
		s.mu.Lock()
		for _, e := range b.Entries {
			s.written = append(s.written, e.Value)
		}
		s.mu.Unlock()
	}
	return err
}

// writtenAfterCopy reports whether a record holding each marker was
// written after the copy.
func (s *heldSyncStore) writtenAfterCopy(markers ...string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range markers {
		if !slices.ContainsFunc(s.written, func(v []byte) bool { return bytes.Contains(v, []byte(m)) }) {
			return false
		}
	}
	return true
}

// trimCrossing is one case of
// TestTopicLimits_TrimCountingUnsyncedSendsAfterAPowerLoss: sends made
// before the durable one (SyncNever, synced by its fsync), the durable
// one, and the SyncNever append (of one queue) stored after its fsync and
// before its trim; each "ID@queue".
type trimCrossing struct {
	name          string
	limits        equeue.TopicLimits
	queues        int
	synced        []string
	durable       string
	unsynced      []string
	before, after []string // the IDs the topic holds before the power loss and after the reopen
}

// A drop-oldest trim that counted sends not yet synced: on a SyncNever
// engine a SyncAlways send takes the topic past its limit, and a SyncNever
// append is stored after its fsync and before the trim, which counts it
// and drops more. A power loss right after the fsync loses that append
// and the trim. The README reasons what comes back: Open trims from what
// is stored, so the cut at open is smaller by as many as the lost sends,
// and messages the engine had reported dropped are read again. This test
// holds the engine to exactly that and to what its callers were told:
// every message read after the reopen is stored once at the offset its
// send answered, open cuts no synced message the lost trim had kept, the
// topic counts what it holds (within its limit), and a send after the
// reopen gets an offset past every stored message of its queue.
func TestTopicLimits_TrimCountingUnsyncedSendsAfterAPowerLoss(t *testing.T) {
	pad := strings.Repeat(".", 100)
	for _, c := range []trimCrossing{{
		name:   "count, one queue",
		limits: equeue.TopicLimits{MaxMessages: 3, Overflow: equeue.OverflowDropOldest}, queues: 1,
		synced: []string{"a1@0", "a2@0", "a3@0"}, durable: "d1@0", unsynced: []string{"b1@0", "b2@0"},
		before: []string{"d1", "b1", "b2"}, after: []string{"a2", "a3", "d1"},
	}, {
		// The trim cuts the durable send's queue, longer by the lost
		// sends; open cuts the other one.
		name:   "count, two queues",
		limits: equeue.TopicLimits{MaxMessages: 3, Overflow: equeue.OverflowDropOldest}, queues: 2,
		synced: []string{"x0@0", "x1@0", "x2@0"}, durable: "d1@1", unsynced: []string{"b1@1", "b2@1", "b3@1"},
		before: []string{"x1", "x2", "b3"}, after: []string{"x1", "x2", "d1"},
	}, {
		// Records of about 126 bytes: three fit, four do not.
		name:   "bytes, one queue",
		limits: equeue.TopicLimits{MaxBytes: 390, Overflow: equeue.OverflowDropOldest}, queues: 1,
		synced: []string{"a1@0", "a2@0", "a3@0"}, durable: "d1@0", unsynced: []string{"b1@0", "b2@0"},
		before: []string{"d1", "b1", "b2"}, after: []string{"a2", "a3", "d1"},
	}} {
		t.Run(c.name, func(t *testing.T) { trimCrossingRun(t, c, pad) })
	}
}

func trimCrossingRun(t *testing.T, c trimCrossing, pad string) {
	ctx := ctxT(t)
	dir, crashed := t.TempDir(), t.TempDir()
	bo := store.DefaultBadgerOptions()
	bo.MemTableSize, bo.ValueLogFileSize = 1<<20, 1<<20 // small files to copy
	st, err := store.OpenBadger(dir, &bo)
	require.NoError(t, err)
	hs := &heldSyncStore{Store: st, dir: dir, to: crashed, copied: make(chan error, 1), release: make(chan struct{})}
	e, err := equeue.Open("", &equeue.Options{Store: hs, Sync: equeue.SyncNever})
	require.NoError(t, err)
	released, closed := false, false
	t.Cleanup(func() {
		if !released {
			close(hs.release)
		}
		if !closed {
			_ = e.Close()
		}
	})
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: c.queues, Limits: c.limits}))
	told := map[string]crashPos{} // ID → where its send answered
	type answer struct {
		id  string
		pos crashPos
		err error
	}
	answers := make(chan []answer, 2)
	send := func(sync equeue.SyncPolicy, at ...string) []answer {
		var queue int
		var ms []*equeue.Message
		for _, a := range at {
			id, q, _ := strings.Cut(a, "@")
			n, err := strconv.Atoi(q)
			require.NoError(t, err)
			queue = n
			ms = append(ms, &equeue.Message{ID: id, Body: []byte(id + pad)})
		}
		r, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: queue, Sync: &sync, Messages: ms})
		out := make([]answer, len(ms))
		for i, m := range ms {
			out[i] = answer{m.ID, crashPos{r.Queue, r.FirstOffset + int64(i)}, err}
		}
		return out
	}
	for _, at := range c.synced {
		a := send(equeue.SyncNever, at)[0]
		require.NoError(t, a.err, "send %s", a.id)
		told[a.id] = a.pos
	}
	hs.armed.Store(true)
	go func() { answers <- send(equeue.SyncAlways, c.durable) }()
	select {
	case err := <-hs.copied:
		require.NoError(t, err, "copying the directory at the durable send's fsync")
	case <-time.After(waitLong):
		t.Fatal("the durable send never fsynced")
	}
	// The fsync is held: the SyncNever append is stored after it.
	go func() { answers <- send(equeue.SyncNever, c.unsynced...) }()
	var markers []string
	for _, at := range c.unsynced {
		id, _, _ := strings.Cut(at, "@")
		markers = append(markers, id)
	}
	eventually(t, waitLong, func() bool { return hs.writtenAfterCopy(markers...) }, "%v stored after the fsync", markers)
	close(hs.release)
	released = true
	for range 2 {
		for _, a := range <-answers {
			require.NoError(t, a.err, "send %s", a.id)
			told[a.id] = a.pos
		}
	}

	// Every send has returned, so the topic was trimmed back, and the
	// trim counted the sends stored after the fsync.
	before := crashReadTopic(t, ctx, e, "t")
	require.Equal(t, trimCrossingWant(told, c.before), before, "the trim counted the sends stored after the fsync")
	require.NoError(t, e.Close())
	closed = true
	require.NotZero(t, storedWatermarks(t, dir, &bo), "the trim stored a watermark")

	// The power loss: what was written after the fsync is lost.
	require.Equal(t, 0, storedWatermarks(t, crashed, &bo), "the power loss lost the trim")
	st2, err := store.OpenBadger(crashed, &bo)
	require.NoError(t, err)
	e2, err := equeue.Open("", &equeue.Options{Store: st2, Sync: equeue.SyncNever})
	require.NoError(t, err)
	defer func() { assert.NoError(t, e2.Close()) }()
	after := crashReadTopic(t, ctx, e2, "t")
	for id, at := range after {
		assert.Equal(t, []crashPos{told[id]}, at, "%s is stored once, at the offset its send answered", id)
	}
	for _, at := range c.unsynced {
		id, _, _ := strings.Cut(at, "@")
		assert.NotContains(t, after, id, "%s was sent with SyncNever after the fsync: the power loss lost it", id)
	}
	lost := map[string]bool{}
	for _, at := range c.unsynced {
		id, _, _ := strings.Cut(at, "@")
		lost[id] = true
	}
	for id := range before {
		if !lost[id] {
			assert.Contains(t, after, id, "%s, kept by the trim and synced, is not cut at open", id)
		}
	}
	// The README's reasoning: the cut at open is smaller by the lost
	// sends, so messages the lost trim dropped come back, and only those.
	assert.Equal(t, trimCrossingWant(told, c.after), after, "what open kept of what was stored")
	if c.limits.MaxMessages > 0 {
		assert.LessOrEqual(t, int64(len(after)), c.limits.MaxMessages, "the topic is within its limit after the reopen")
	}
	info, err := e2.Topic(ctx, "t")
	require.NoError(t, err)
	assert.Equal(t, int64(len(after)), info.Messages, "the topic counts what it holds")

	// A send after the reopen goes past every stored message of its queue.
	for q := range c.queues {
		r, err := e2.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: []*equeue.Message{{ID: fmt.Sprintf("n%d", q), Body: []byte("n")}}})
		require.NoError(t, err)
		for id, at := range after {
			if at[0].queue == q {
				assert.Greater(t, r.FirstOffset, at[0].offset, "a send after the reopen goes past %s", id)
			}
		}
	}
}

// trimCrossingWant is where told says each of ids is stored.
func trimCrossingWant(told map[string]crashPos, ids []string) map[string][]crashPos {
	want := map[string][]crashPos{}
	for _, id := range ids {
		want[id] = []crashPos{told[id]}
	}
	return want
}
