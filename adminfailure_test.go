package equeue_test

import (
	"bytes"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// failWritesOf makes every store write that touches key fail.
func failWritesOf(fs *faultstore.FS, key string) {
	fs.OnWrite(func(b *store.Batch) error {
		for _, op := range b.Meta {
			if string(op.Key) == key {
				return faultstore.ErrInjected
			}
		}
		return nil
	})
}

// metaDump reads every metadata key and value of the store.
func metaDump(t testing.TB, fs *faultstore.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, fs.ScanMeta(nil, func(k, v []byte) error {
		out[string(k)] = string(v)
		return nil
	}))
	return out
}

func subTopics(gi equeue.GroupInfo) []string {
	var out []string
	for _, s := range gi.Subscriptions {
		out = append(out, s.Topic)
	}
	return out
}

// TestAdmin_FailedWriteLeavesEngineAsBefore fails the store write of each
// admin change: the engine never shows the change, neither while the write
// is in progress nor after it failed, the store holds none of it (also
// after a reopen), and the same change succeeds when retried.
func TestAdmin_FailedWriteLeavesEngineAsBefore(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := f.E
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			require.NoError(t, e.CreateTopic(ctx, "v", 1))
			_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "old", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "old", Member: "m"}))

			// CreateTopic: the topic sequence and the topic are one write.
			before := metaDump(t, f.FS)
			failWritesOf(f.FS, "topic/u")
			require.ErrorIs(t, e.CreateTopic(ctx, "u", 1), faultstore.ErrInjected)
			assert.Equal(t, before, metaDump(t, f.FS), "a failed CreateTopic stores nothing")

			// AddQueues and SetQueueWritable: nothing shows before the write returned.
			var seenQueues, seenWritable atomic.Value
			f.FS.OnWrite(func(*store.Batch) error {
				info, err := e.Topic(ctx, "t")
				if err == nil {
					seenQueues.Store(len(info.Queues))
					seenWritable.Store(info.Queues[1].Writable)
				}
				return faultstore.ErrInjected
			})
			require.ErrorIs(t, e.AddQueues(ctx, "t", 2), faultstore.ErrInjected)
			assert.Equal(t, 2, seenQueues.Load(), "queue count seen during the write")
			require.ErrorIs(t, e.SetQueueWritable(ctx, "t", 1, false), faultstore.ErrInjected)
			assert.Equal(t, true, seenWritable.Load(), "queue 1 seen writable during the write")

			// DeleteTopic and JoinGroup's configuration.
			failWritesOf(f.FS, "topic/t")
			require.ErrorIs(t, e.DeleteTopic(ctx, "t"), faultstore.ErrInjected)
			failWritesOf(f.FS, "grp/new")
			_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "new", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.ErrorIs(t, err, faultstore.ErrInjected)
			failWritesOf(f.FS, "grp/old")
			_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "old", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "v"}}})
			require.ErrorIs(t, err, faultstore.ErrInjected)
			f.FS.OnWrite(nil)

			unchanged := func(e *equeue.Engine, when string) {
				t.Helper()
				_, err := e.Topic(ctx, "u")
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "%s: topic u", when)
				info, err := e.Topic(ctx, "t")
				require.NoError(t, err, "%s: topic t survives its failed delete", when)
				require.Len(t, info.Queues, 2, when)
				assert.True(t, info.Queues[1].Writable, when)
				route, err := e.Route(ctx, "t")
				require.NoError(t, err)
				assert.Equal(t, []int{0, 1}, route.Writable, when)
				_, err = e.Group(ctx, "new")
				assert.ErrorIs(t, err, equeue.ErrGroupNotFound, "%s: group new", when)
				gi, err := e.Group(ctx, "old")
				require.NoError(t, err)
				assert.Equal(t, []string{"t"}, subTopics(gi), "%s: group old keeps its subscriptions", when)
			}
			unchanged(e, "in process")
			if kind == "badger" {
				e = f.reopen()
				unchanged(e, "after reopen")
			}

			// The engine is usable: each change succeeds when retried.
			p := newProducer(t, e, nil)
			_, err = p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
			require.NoError(t, err)
			require.NoError(t, e.CreateTopic(ctx, "u", 1))
			require.NoError(t, e.AddQueues(ctx, "t", 2))
			require.NoError(t, e.SetQueueWritable(ctx, "t", 1, false))
			_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "new", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			_, err = e.JoinGroup(ctx, &equeue.JoinRequest{Group: "old", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "v"}}})
			require.NoError(t, err)
			require.NoError(t, e.DeleteTopic(ctx, "v"))
			changed := func(e *equeue.Engine, when string) {
				t.Helper()
				_, err := e.Topic(ctx, "u")
				assert.NoError(t, err, when)
				_, err = e.Topic(ctx, "v")
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound, when)
				info, err := e.Topic(ctx, "t")
				require.NoError(t, err, when)
				require.Len(t, info.Queues, 4, when)
				assert.False(t, info.Queues[1].Writable, when)
				_, err = e.Group(ctx, "new")
				assert.NoError(t, err, when)
				gi, err := e.Group(ctx, "old")
				require.NoError(t, err)
				assert.Equal(t, []string{"v"}, subTopics(gi), when)
			}
			changed(e, "in process")
			if kind == "badger" {
				changed(f.reopen(), "after reopen")
			}
		})
	}
}

// TestAdmin_CommitRacingDeleteTopic commits an offset whose store write is
// held up while the topic is deleted. The deletion waits for the commit and
// removes its offset too, with a synced write: after re-creating the topic
// (and after a restart) the group starts at the new topic's first message.
func TestAdmin_CommitRacingDeleteTopic(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := f.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			fillQueue(t, e, "t", 5)
			join := &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}, From: equeue.ConsumeFromEarliest}
			a, err := e.JoinGroup(ctx, join)
			require.NoError(t, err)
			require.Len(t, a.Queues, 1)

			// Unsynced tracks whether a store write is not yet followed by a sync.
			var unsynced atomic.Bool
			f.FS.OnSync(func() error { unsynced.Store(false); return nil })
			offKey := []byte("off/g\x00\x00t\x000")
			deleted := make(chan error, 1)
			var once sync.Once
			f.FS.OnWrite(func(b *store.Batch) error {
				unsynced.Store(true)
				for _, op := range b.Meta {
					if bytes.Equal(op.Key, offKey) && !op.Delete {
						// Delete the topic while this commit's write is in
						// progress; the deletion may wait for it to finish.
						once.Do(func() {
							go func() { deleted <- e.DeleteTopic(ctx, "t") }()
							select {
							case err := <-deleted:
								deleted <- err
							case <-time.After(time.Second):
							}
						})
					}
				}
				return nil
			})
			err = e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 5}}})
			require.NoError(t, err)
			require.NoError(t, <-deleted)
			assert.False(t, unsynced.Load(), "every metadata write of the deletion is synced under SyncAlways")
			f.FS.OnWrite(nil)
			f.FS.OnSync(nil)

			startsAtNewMessages := func(e *equeue.Engine, when string) {
				t.Helper()
				a, err := e.JoinGroup(ctx, join)
				require.NoError(t, err)
				require.Len(t, a.Queues, 1, when)
				offs, err := e.FetchOffsets(ctx, "g", "m", a.Queues)
				require.NoError(t, err)
				require.Len(t, offs, 1)
				assert.Equal(t, int64(0), offs[0].Offset, "%s: the group starts at the re-created topic's first message", when)
			}
			if kind == "badger" {
				e = f.reopen()
			}
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			fillQueue(t, e, "t", 2)
			startsAtNewMessages(e, "re-created")
			if kind == "badger" {
				startsAtNewMessages(f.reopen(), "re-created, after reopen")
			}
		})
	}
}

// TestAdmin_CommitAfterDeleteIsFenced: deleting a topic drops its offsets
// with a synced write, and a later commit under a grant of the deleted topic
// is refused and stores nothing, even once the topic is re-created.
func TestAdmin_CommitAfterDeleteIsFenced(t *testing.T) {
	ctx := ctxT(t)
	f := newFaultRig(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	e := f.E
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 0}}}))
	var unsynced atomic.Bool
	f.FS.OnSync(func() error { unsynced.Store(false); return nil })
	f.FS.OnWrite(func(*store.Batch) error { unsynced.Store(true); return nil })
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	assert.False(t, unsynced.Load(), "every metadata write of the deletion is synced under SyncAlways")
	f.FS.OnWrite(nil)
	f.FS.OnSync(nil)
	_, err = f.FS.GetMeta([]byte("off/g\x00m\x00t\x000"))
	require.ErrorIs(t, err, store.ErrNotFound, "the deleted topic's offset is gone")
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	// The grant was made for the deleted topic: it must not set an offset
	// of the new one.
	err = e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 7}}})
	require.ErrorIs(t, err, equeue.ErrFenced)
	_, err = f.FS.GetMeta([]byte("off/g\x00m\x00t\x000"))
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// TestAdmin_FailedSyncKeepsMemoryWithStore fails the fsync after each admin
// change's write succeeded: the change is in the store, so the engine shows
// it too (memory never contradicts the store), the error says it may not be
// durable, and the engine stores nothing more until it is reopened. After
// the reopen the store and the engine agree.
func TestAdmin_FailedSyncKeepsMemoryWithStore(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := f.E
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			require.NoError(t, e.CreateTopic(ctx, "v", 1))
			a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)

			// Each change's fsync fails; the engine shows the change, refuses
			// the next one, and is reopened before it.
			failSync := func(name string, call func() error, shows func()) {
				t.Helper()
				f.FS.FailSyncs(1)
				assert.ErrorIs(t, call(), faultstore.ErrInjected, name)
				shows()
				assert.ErrorIs(t, e.CreateTopic(ctx, "refused", 1), equeue.ErrStoreFailed, "after %s", name)
				e = f.reopen()
			}
			failSync("commit", func() error {
				return e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 0}}})
			}, func() {
				gi, err := e.Group(ctx, "g")
				require.NoError(t, err)
				for _, q := range gi.Queues {
					if q.QueueRef == a.Queues[0].QueueRef {
						assert.Equal(t, int64(0), q.Committed, "commit shows")
					}
				}
			})
			failSync("create", func() error { return e.CreateTopic(ctx, "u", 1) }, func() {
				_, err := e.Topic(ctx, "u")
				assert.NoError(t, err, "create shows")
			})
			failSync("add queues", func() error { return e.AddQueues(ctx, "t", 2) }, func() {
				info, err := e.Topic(ctx, "t")
				require.NoError(t, err)
				assert.Len(t, info.Queues, 4, "add queues shows")
			})
			failSync("close queue", func() error { return e.SetQueueWritable(ctx, "t", 1, false) }, func() {
				info, err := e.Topic(ctx, "t")
				require.NoError(t, err)
				assert.False(t, info.Queues[1].Writable, "close queue shows")
			})
			failSync("delete", func() error { return e.DeleteTopic(ctx, "v") }, func() {
				_, err := e.Topic(ctx, "v")
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "delete shows")
			})
			failSync("join", func() error {
				_, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "new", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "u"}}})
				return err
			}, func() {
				gi, err := e.Group(ctx, "new")
				require.NoError(t, err, "join shows")
				assert.Equal(t, []string{"u"}, subTopics(gi))
			})
			_, err = e.Topic(ctx, "refused")
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "a refused change is not stored")

			applied := func(e *equeue.Engine, when string) {
				t.Helper()
				_, err := e.Topic(ctx, "u")
				assert.NoError(t, err, "%s: topic u", when)
				_, err = e.Topic(ctx, "v")
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "%s: topic v", when)
				info, err := e.Topic(ctx, "t")
				require.NoError(t, err)
				require.Len(t, info.Queues, 4, when)
				assert.False(t, info.Queues[1].Writable, when)
				gi, err := e.Group(ctx, "g")
				require.NoError(t, err)
				committed := map[equeue.QueueRef]int64{}
				for _, q := range gi.Queues {
					committed[q.QueueRef] = q.Committed
				}
				assert.Equal(t, int64(0), committed[a.Queues[0].QueueRef], "%s: committed offset", when)
				gi, err = e.Group(ctx, "new")
				require.NoError(t, err, "%s: group new", when)
				assert.Equal(t, []string{"u"}, subTopics(gi), when)
			}
			applied(e, "after the reopens")
			applied(f.reopen(), "after another reopen")
		})
	}
}

// dropFailStore fails DropQueue while fail is set.
type dropFailStore struct {
	*faultstore.FS
	fail atomic.Bool
}

func (s *dropFailStore) DropQueue(q store.QueueID) error {
	if s.fail.Load() {
		return faultstore.ErrInjected
	}
	return s.FS.DropQueue(q)
}

// TestAdmin_DeletedTopicRecordsDroppedOnOpen: when dropping a deleted
// topic's records fails (or the process dies before), the next open drops
// them; nothing is left that is never deleted.
func TestAdmin_DeletedTopicRecordsDroppedOnOpen(t *testing.T) {
	ctx := ctxT(t)
	dir := t.TempDir()
	open := func(fail bool) (*equeue.Engine, *dropFailStore) {
		bo := store.DefaultBadgerOptions()
		b, err := store.OpenBadger(dir, &bo)
		require.NoError(t, err)
		s := &dropFailStore{FS: faultstore.New(b)}
		s.fail.Store(fail)
		e, err := equeue.Open("", &equeue.Options{Store: s, Retention: equeue.RetentionPolicy{Interval: -1}})
		require.NoError(t, err)
		return e, s
	}
	e, s := open(true)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	fillQueue(t, e, "t", 50)
	require.NoError(t, e.DeleteTopic(ctx, "t"), "the topic is deleted even if its records are not dropped yet")
	_, err := e.Topic(ctx, "t")
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)
	require.True(t, storedBelow(t, s, firstTopicQueue0, 50), "the failed drop left the records")
	require.NoError(t, e.Close())

	e, s = open(false)
	assert.False(t, storedBelow(t, s, firstTopicQueue0, 50), "open dropped the deleted topic's records")
	require.NoError(t, e.Close())
}
