package equeue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/remote"
	"github.com/equeue-go/equeue/store"
)

// groupDeleterOver returns what deletes groups over the transport.
func groupDeleterOver(b equeue.Broker) remote.GroupDeleter { return b.(remote.GroupDeleter) }

// topicQueueIDs reads the store IDs of a topic's queues from its metadata.
func topicQueueIDs(t *testing.T, fs *faultstore.FS, name string) []store.QueueID {
	t.Helper()
	v, err := fs.GetMeta([]byte("topic/" + name))
	require.NoError(t, err, "topic %s stored", name)
	var m struct {
		ID     uint32 `json:"id"`
		Queues int    `json:"queues"`
	}
	require.NoError(t, json.Unmarshal(v, &m))
	ids := make([]store.QueueID, m.Queues)
	for i := range ids {
		ids[i] = store.QueueID{Topic: m.ID, Queue: uint32(i)}
	}
	return ids
}

// groupFootprint lists the metadata keys that belong to group g.
func groupFootprint(t *testing.T, fs *faultstore.FS, g string) []string {
	t.Helper()
	var left []string
	for k := range metaDump(t, fs) {
		for _, p := range []string{"grp/" + g, "off/" + g + "\x00", "dlqr/" + g + "\x00", "topic/%RETRY%" + g, "topic/%DLQ%" + g, "d/"} {
			if k == p || (strings.HasSuffix(p, "\x00") || p == "d/") && strings.HasPrefix(k, p) {
				left = append(left, k)
			}
		}
	}
	return left
}

// setUpGroup leaves group g with committed offsets, a retry pending in the
// delay index, a dead letter and a redriven mark, and group "keep" with
// offsets of the same topic.
func setUpGroup(t *testing.T, e *equeue.Engine, b equeue.Broker) (closeG func()) {
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	p := newProducer(t, b, nil)
	for _, body := range []string{"ok", "retry", "dead", "ok2"} {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(body)})
		require.NoError(t, err)
	}
	handler := func(_ context.Context, m *equeue.Message) error {
		switch string(m.Body) {
		case "retry":
			return equeue.RetryAfter(time.Hour, errors.New("later"))
		case "dead":
			return equeue.DeadLetter(errors.New("never"))
		}
		return nil
	}
	c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: handler})
	keep := startConsumer(t, b, equeue.ConsumerOptions{Group: "keep", Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	eventually(t, 30*time.Second, func() bool {
		dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
		return err == nil && len(dl) == 1
	}, "dead letter stored")
	eventually(t, 30*time.Second, func() bool {
		d, err := e.Delayed(ctx, 10)
		return err == nil && d.Pending == 1
	}, "retry pending")
	require.NoError(t, keep.Close())
	return func() { require.NoError(t, c.Close()) }
}

func TestDeleteGroup_NothingOfTheGroupRemains(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			forTransports(t, func(t *testing.T, tr string) {
				if tr == clusterTransport {
					t.Skip("reads the store through the faultstore the engine runs on; a cluster node opens its own store")
				}
				ctx := ctxT(t)
				rig := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
				e := rig.E
				b := brokerOver(t, e, tr)
				del := groupDeleterOver(b)
				closeG := setUpGroup(t, e, b)

				// Live members: refused, nothing changed.
				err := del.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{})
				require.ErrorIs(t, err, equeue.ErrGroupHasMembers)
				_, err = e.Group(ctx, "g")
				require.NoError(t, err)
				closeG()

				dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				_, err = e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{dl[0].Offset}})
				require.NoError(t, err)

				queues := append(topicQueueIDs(t, rig.FS, equeue.RetryTopic("g")), topicQueueIDs(t, rig.FS, equeue.DLQTopic("g"))...)
				require.NotEmpty(t, groupFootprint(t, rig.FS, "g"))
				keepBefore := len(offsetKeys(t, rig.FS, "keep"))
				require.Positive(t, keepBefore)

				require.NoError(t, del.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}))

				assert.Empty(t, groupFootprint(t, rig.FS, "g"), "no key of the group left")
				for _, q := range append(queues, store.QueueID{}) { // the delay log too
					_, _, ok, err := rig.FS.Bounds(q)
					require.NoError(t, err)
					assert.False(t, ok, "records left in %v", q)
				}
				_, err = e.Group(ctx, "g")
				assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
				assert.ErrorIs(t, del.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}), equeue.ErrGroupNotFound)
				assert.Len(t, offsetKeys(t, rig.FS, "keep"), keepBefore, "other groups untouched")
				d, err := e.Delayed(ctx, 10)
				require.NoError(t, err)
				assert.Zero(t, d.Pending)
			})
		})
	}
}

func offsetKeys(t *testing.T, fs *faultstore.FS, g string) []string {
	var out []string
	for k := range metaDump(t, fs) {
		if strings.HasPrefix(k, "off/"+g+"\x00") {
			out = append(out, k)
		}
	}
	return out
}

func TestDeleteGroup_ForceFencesMembers(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		if tr == clusterTransport {
			t.Skip("reads the store through the faultstore the engine runs on; a cluster node opens its own store")
		}
		ctx := ctxT(t)
		rig := newFaultRig(t, "memory", nil)
		e := rig.E
		b := brokerOver(t, e, tr)
		require.NoError(t, e.CreateTopic(ctx, "t", 2))
		c := startConsumer(t, b, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
			Handler: func(context.Context, *equeue.Message) error { return nil }})
		eventually(t, 30*time.Second, func() bool {
			gi, err := e.Group(ctx, "g")
			return err == nil && len(gi.Members) == 1
		}, "member joined")
		// The member is a dead process that has not expired yet.
		equeue.CrashConsumer(c)
		require.NoError(t, groupDeleterOver(b).DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))
		_, err := e.Group(ctx, "g")
		assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
		assert.Empty(t, groupFootprint(t, rig.FS, "g"))
	})
}

// TestDeleteGroup_FailedWriteIsResumable fails each store write of a
// delete in turn: the call reports the error (or, for the write that
// drops a deleted topic's records, which DeleteTopic finishes on the next
// open, succeeds), memory matches the store, and deleting again finishes
// the job.
func TestDeleteGroup_FailedWriteIsResumable(t *testing.T) {
	for fail := 1; fail <= 5; fail++ {
		t.Run("", func(t *testing.T) {
			ctx := ctxT(t)
			rig := newFaultRig(t, "memory", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := rig.E
			closeG := setUpGroup(t, e, e)
			closeG()
			writes := 0
			rig.FS.OnWrite(func(*store.Batch) error {
				writes++
				if writes == fail {
					return faultstore.ErrInjected
				}
				return nil
			})
			before := metaDump(t, rig.FS)
			err := e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{})
			rig.FS.OnWrite(nil)
			if err == nil {
				t.Logf("write %d failing is not an error of the delete", fail)
				assert.Empty(t, groupFootprint(t, rig.FS, "g"))
				return
			}
			if fail == 1 {
				assert.Equal(t, before, metaDump(t, rig.FS), "a failed first write changes nothing")
				gi, err := e.Group(ctx, "g")
				require.NoError(t, err)
				assert.NotEmpty(t, gi.Queues)
			}
			require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}))
			assert.Empty(t, groupFootprint(t, rig.FS, "g"))
		})
	}
}

func TestGroupIdleTTL_DeletesOnlyIdleGroups(t *testing.T) {
	ctx := ctxT(t)
	rig := newFaultRig(t, "memory", &equeue.Options{GroupIdleTTL: 100 * time.Millisecond})
	e := rig.E
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	ok := func(context.Context, *equeue.Message) error { return nil }
	live := startConsumer(t, e, equeue.ConsumerOptions{Group: "live", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok})
	gone := startConsumer(t, e, equeue.ConsumerOptions{Group: "gone", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok})
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	eventually(t, 30*time.Second, func() bool { return len(offsetKeys(t, rig.FS, "gone")) > 0 }, "offsets stored")
	require.NoError(t, gone.Close())

	eventually(t, 30*time.Second, func() bool {
		_, err := e.Group(ctx, "gone")
		return errors.Is(err, equeue.ErrGroupNotFound)
	}, "idle group expired")
	// The group's metadata goes before its retry and dead-letter topics
	// (DeleteGroup deletes the keys first): wait for the whole footprint.
	eventually(t, 30*time.Second, func() bool { return len(groupFootprint(t, rig.FS, "gone")) == 0 },
		"nothing of the expired group is left")
	gi, err := e.Group(ctx, "live")
	require.NoError(t, err, "a group with a live member stays")
	assert.Len(t, gi.Members, 1)
	require.NoError(t, live.Close())
}

// TestDeleteGroup_FailedRecordDropsFinishOnOpen fails every record
// deletion of a delete (the delay log trim, the topics' records): the group
// and its metadata are gone all the same, and the records left behind are
// swept when the engine opens again.
func TestDeleteGroup_FailedRecordDropsFinishOnOpen(t *testing.T) {
	ctx := ctxT(t)
	rig := newFaultRig(t, "badger", &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
	closeG := setUpGroup(t, rig.E, rig.E)
	closeG()
	queues := append(topicQueueIDs(t, rig.FS, equeue.RetryTopic("g")), topicQueueIDs(t, rig.FS, equeue.DLQTopic("g"))...)
	queues = append(queues, store.QueueID{}) // the delay log
	left := func() int {
		n := 0
		for _, q := range queues {
			_, _, ok, err := rig.FS.Bounds(q)
			require.NoError(t, err)
			if ok {
				n++
			}
		}
		return n
	}
	require.Positive(t, left())

	rig.FS.FailDeletes(1 << 20)
	require.NoError(t, rig.E.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}))
	rig.FS.FailDeletes(0)
	assert.Empty(t, groupFootprint(t, rig.FS, "g"))
	t.Logf("queues with records left after failed deletions: %d", left())

	rig.reopen()
	assert.Zero(t, left(), "records swept on open")
	_, err := rig.E.Group(ctx, "g")
	assert.ErrorIs(t, err, equeue.ErrGroupNotFound)
}

// TestGroupIdleTTL_ForgetsAbsentBroadcastMembers: a broadcasting member
// keeps offsets under its own ID, so a member that never comes back (a
// consumer with a generated ID restarted, a retired machine) kept them in
// memory and the store for good, and the group's lag (the slowest
// member's, in the metrics) grew with it. With GroupIdleTTL such an ID's
// offsets are deleted once no member had it for that long; a live
// member's stay, and a failed delete is retried.
func TestGroupIdleTTL_ForgetsAbsentBroadcastMembers(t *testing.T) {
	ctx := ctxT(t)
	rig := newFaultRig(t, "memory", &equeue.Options{GroupIdleTTL: time.Second})
	e := rig.E
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	ok := func(context.Context, *equeue.Message) error { return nil }
	opts := func(id string) equeue.ConsumerOptions {
		return equeue.ConsumerOptions{Group: "b", ID: id, Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok}
	}
	stay := startConsumer(t, e, opts("stay"))
	old := startConsumer(t, e, opts("old"))
	p := newProducer(t, e, nil)
	for i := range 4 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "m%d", i)})
		require.NoError(t, err)
	}
	member := func(id string) (keys int) {
		for _, k := range offsetKeys(t, rig.FS, "b") {
			if strings.HasPrefix(k, "off/b\x00"+id+"\x00") {
				keys++
			}
		}
		return keys
	}
	eventually(t, 30*time.Second, func() bool { return member("old") == 2 && member("stay") == 2 }, "both members' offsets stored")
	require.NoError(t, old.Close())

	rig.FS.FailWrites(1 << 20)  // the first deletions fail
	time.Sleep(2 * time.Second) // past the TTL: the deletions are tried, and fail
	assert.Equal(t, 2, member("old"), "nothing is deleted while writes fail")
	gi, err := e.Group(ctx, "b")
	require.NoError(t, err)
	rows := map[string]int{}
	for _, q := range gi.Queues {
		rows[q.Owner]++
	}
	assert.Equal(t, map[string]int{"stay": 2, "old": 2}, rows, "memory matches the store")
	rig.FS.FailWrites(0)

	eventually(t, 30*time.Second, func() bool { return member("old") == 0 }, "the absent member's offsets are deleted")
	assert.Equal(t, 2, member("stay"), "the live member's offsets stay")
	gi, err = e.Group(ctx, "b")
	require.NoError(t, err)
	for _, q := range gi.Queues {
		assert.Equal(t, "stay", q.Owner, "no row of the absent member is left")
	}
	require.NoError(t, stay.Close())
}

// TestPullMarks_GoWithTheirMembers: the engine remembers what each member
// pulled (the bound of SendBack). Those marks stayed for as long as the
// engine ran: one per queue for every group ever deleted (Watermill makes
// a group per fan-out subscription) and every broadcasting member ID ever
// seen. Now the marks of members that are gone are dropped.
func TestPullMarks_GoWithTheirMembers(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{SessionTimeout: 2 * time.Second})
	equeue.SetMarksSweepEvery(e, 50*time.Millisecond)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	p := newProducer(t, e, nil)
	for i := range 8 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Keys: []string{fmt.Sprint(i)}, Body: []byte("x")})
		require.NoError(t, err)
	}
	handled := make(chan struct{}, 1000)
	ok := func(context.Context, *equeue.Message) error { handled <- struct{}{}; return nil }
	waitFor := func(n int) {
		for range n {
			select {
			case <-handled:
			case <-ctx.Done():
				t.Fatal("handler not called")
			}
		}
	}
	live := startConsumer(t, e, equeue.ConsumerOptions{Group: "live", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok})
	waitFor(8)
	for i := range 5 {
		c := startConsumer(t, e, equeue.ConsumerOptions{Group: fmt.Sprintf("fan-%d", i), Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok})
		waitFor(8)
		require.NoError(t, c.Close())
		require.NoError(t, e.DeleteGroup(ctx, fmt.Sprintf("fan-%d", i), equeue.DeleteGroupOptions{}))
		b := startConsumer(t, e, equeue.ConsumerOptions{Group: "b", Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok})
		waitFor(8)
		require.NoError(t, b.Close())
	}
	eventually(t, 30*time.Second, func() bool { return equeue.PullMarks(e) <= 4 },
		"only the live group's marks are left (one per queue it pulled)")
	require.Positive(t, equeue.PullMarks(e), "a live member keeps its marks")
	require.NoError(t, live.Close())
}

// TestGroupIdleTTL_CountsFromTheLastLeave: idle time counts from when the
// last member left, not from when a check first found none: a member
// that comes back between two checks, commits and leaves again keeps its
// offsets (a broadcasting member's) and its group for a whole TTL after
// that. Before, the next check deleted the offset just committed (found
// by review). The engine's log tells when each deletion came; the test
// compares it with a time read before the last leave, so a slow machine
// can only make the gap longer.
func TestGroupIdleTTL_CountsFromTheLastLeave(t *testing.T) {
	const ttl = 2 * time.Second
	ctx := ctxT(t)
	logs := newLogTimes()
	rig := newFaultRig(t, "memory", &equeue.Options{GroupIdleTTL: ttl, Logger: slog.New(logs)})
	e := rig.E
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	send := func() {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		require.NoError(t, err)
	}
	handled := make(chan struct{}, 100)
	ok := func(context.Context, *equeue.Message) error { handled <- struct{}{}; return nil }
	// run handles a message as member id of group and leaves; it returns
	// a time read before the leave.
	run := func(group, id string, model equeue.MessageModel) time.Time {
		c := startConsumer(t, e, equeue.ConsumerOptions{Group: group, ID: id, Model: model, Subscriptions: []equeue.Subscription{{Topic: "t"}}, Handler: ok})
		select {
		case <-handled:
		case <-ctx.Done():
			t.Fatal("not handled")
		}
		leaving := time.Now()
		require.NoError(t, c.Close())
		return leaving
	}
	keep := startConsumer(t, e, equeue.ConsumerOptions{Group: "b", ID: "keep", Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}},
		Handler: func(context.Context, *equeue.Message) error { return nil }})
	defer keep.Close()
	hasOffset := func(group, member string) bool {
		for _, k := range offsetKeys(t, rig.FS, group) {
			if member == "" || strings.HasPrefix(k, "off/"+group+"\x00"+member+"\x00") {
				return true
			}
		}
		return false
	}

	send()
	run("b", "cron", equeue.Broadcasting)
	run("c", "", equeue.Clustering)
	time.Sleep(ttl - 300*time.Millisecond) // a check has long seen both absent
	send()
	cronLeft := run("b", "cron", equeue.Broadcasting)
	cLeft := run("c", "", equeue.Clustering)
	eventually(t, 30*time.Second, func() bool { return !hasOffset("b", "cron") }, "the member's offsets go a TTL after it left")
	eventually(t, 30*time.Second, func() bool {
		_, err := e.Group(ctx, "c")
		return errors.Is(err, equeue.ErrGroupNotFound)
	}, "the group goes a TTL after its member left")
	assert.True(t, hasOffset("b", "keep"))

	at, logged := logs.first("offsets of an absent broadcasting member deleted", "b", "cron")
	require.True(t, logged, "the deletion of the member's offsets is logged")
	assert.GreaterOrEqual(t, at.Sub(cronLeft), ttl, "the member's offsets, committed just before it left again, were deleted within a TTL of that leave")
	at, logged = logs.first("idle group deleted", "c", "")
	require.True(t, logged, "the deletion of the idle group is logged")
	assert.GreaterOrEqual(t, at.Sub(cLeft), ttl, "the group was deleted within a TTL of its member's last leave")
}

// TestGroupIdleTTL_KeepsAGroupThatCommitsFromOutside: a group coordinated
// outside the engine (the Kafka listener's, through CommitGroupOffsets) has
// no native members to come and go: its commits are its sign of use.
// Before, GroupIdleTTL deleted its offsets every TTL while its consumers
// kept committing (found by review).
func TestGroupIdleTTL_KeepsAGroupThatCommitsFromOutside(t *testing.T) {
	const ttl = 400 * time.Millisecond
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", &equeue.Options{GroupIdleTTL: ttl})
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	ref := equeue.QueueRef{Topic: "t", Queue: 0}
	require.NoError(t, e.CommitGroupOffsets(ctx, "kafka-group", map[equeue.QueueRef]int64{ref: 1}))
	for range 5 * int(ttl/(50*time.Millisecond)) { // five TTLs of commits
		time.Sleep(50 * time.Millisecond)
		offs, err := e.GroupOffsets(ctx, "kafka-group")
		require.NoError(t, err)
		require.Equal(t, int64(1), offs[ref], "the offset of a group that commits went missing")
		require.NoError(t, e.CommitGroupOffsets(ctx, "kafka-group", map[equeue.QueueRef]int64{ref: 1}))
	}
	eventually(t, 30*time.Second, func() bool {
		_, err := e.Group(ctx, "kafka-group")
		return errors.Is(err, equeue.ErrGroupNotFound)
	}, "deleted once it stopped committing")
}
