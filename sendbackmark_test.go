package equeue_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// sentBackMarks counts the send-back marks st holds (sendbackmark.go).
func sentBackMarks(t *testing.T, st interface {
	ScanMeta(prefix []byte, fn func(key, value []byte) error) error
}) int {
	t.Helper()
	n := 0
	require.NoError(t, st.ScanMeta([]byte("sbk/"), func(_, _ []byte) error {
		n++
		return nil
	}))
	return n
}

// queueEnd returns the next offset of topic's queue 0 (0 when the topic
// does not exist).
func queueEnd(t *testing.T, e *equeue.Engine, topic string) int64 {
	t.Helper()
	info, err := e.Topic(ctxT(t), topic)
	if errors.Is(err, equeue.ErrTopicNotFound) {
		return 0
	}
	require.NoError(t, err)
	return info.Queues[0].MaxOffset
}

// openMarked opens an engine on a fault store over memory, with topic "t"
// (one queue) holding n messages, and member "m" of group "g" holding
// them pulled.
func openMarked(t *testing.T, n int, opts *equeue.Options) (*equeue.Engine, *faultstore.FS, equeue.Grant) {
	t.Helper()
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	var o equeue.Options
	if opts != nil {
		o = *opts
	}
	o.Store = fs
	e, err := equeue.Open("", &o)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for range n {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		require.NoError(t, err)
	}
	g, res := joinAndPull(t, e, "g", "m", "t")
	require.Len(t, res.Messages, n)
	return e, fs, g
}

// A message sent back twice (a caller retrying a send-back whose answer it
// lost) is stored once; the repeat is answered as a duplicate with the
// first copy's topic and attempts, whatever it asks for, over every
// transport.
func TestSendBack_OncePerPulledMessage(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		clusterSuiteOnly(t, tr)
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		for range 2 {
			_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
			require.NoError(t, err)
		}
		g, res := joinAndPull(t, b, "g", "m", "t")
		require.Len(t, res.Messages, 2)

		retry := &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Attempts: 1, Cause: "boom"}
		first, err := b.SendBack(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, equeue.SendBackResult{Topic: equeue.RetryTopic("g"), Attempts: 1}, first)
		again, err := b.SendBack(ctx, retry)
		require.NoError(t, err)
		assert.Equal(t, equeue.SendBackResult{Topic: equeue.RetryTopic("g"), Attempts: 1, Duplicate: true}, again)
		dead := *retry
		dead.DeadLetter, dead.Attempts = true, 5
		asDead, err := b.SendBack(ctx, &dead)
		require.NoError(t, err)
		assert.Equal(t, again, asDead, "the first send-back stands")
		assert.Equal(t, int64(1), queueEnd(t, e, equeue.RetryTopic("g")), "one copy in the retry topic")
		assert.Zero(t, queueEnd(t, e, equeue.DLQTopic("g")), "no dead letter")

		// The other message has a mark of its own.
		dead.Offset = 1
		other, err := b.SendBack(ctx, &dead)
		require.NoError(t, err)
		assert.Equal(t, equeue.SendBackResult{Topic: equeue.DLQTopic("g"), Attempts: 5}, other)
		assert.Equal(t, int64(1), queueEnd(t, e, equeue.DLQTopic("g")))
	})
}

// A send-back's mark is stored with its copy: after a restart without the
// commit (a process killed between the two), the message delivered again
// and sent back again is not stored twice; the commit that passes it then
// deletes the mark.
func TestSendBack_MarkOutlivesARestart(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b, restart := openOverRestartable(t, tr, nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
		require.NoError(t, err)
		g, res := joinAndPull(t, b, "g", "m", "t")
		require.Len(t, res.Messages, 1)
		req := &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Attempts: 3, DeadLetter: true}
		_, err = b.SendBack(ctx, req)
		require.NoError(t, err)

		e, b = restart()
		g, res = joinAndPull(t, b, "g", "m", "t")
		require.Len(t, res.Messages, 1, "not committed: delivered again")
		req.Grant = g
		again, err := b.SendBack(ctx, req)
		require.NoError(t, err)
		assert.Equal(t, equeue.SendBackResult{Topic: equeue.DLQTopic("g"), Attempts: 3, Duplicate: true}, again)
		dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 10})
		require.NoError(t, err)
		assert.Len(t, dls, 1, "dead-lettered once")

		require.NoError(t, b.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
			Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 1}}}))
		// Delivered again on purpose: the mark went with the commit, so a
		// failure is sent back again.
		require.NoError(t, b.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
		require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
		e, b = restart()
		g, res = joinAndPull(t, b, "g", "m", "t")
		require.Len(t, res.Messages, 1)
		req.Grant = g
		third, err := b.SendBack(ctx, req)
		require.NoError(t, err)
		assert.False(t, third.Duplicate)
		dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 10})
		require.NoError(t, err)
		assert.Len(t, dls, 2)
	})
}

// The marks go with what passes or removes their messages: a commit past
// them (in its own write), a reset of the group's offsets (even backwards:
// the messages are to be handled again), and the deletion of their topic
// or group.
func TestSendBack_MarksGoWithCommitResetAndDeletes(t *testing.T) {
	ctx := ctxT(t)
	e, fs, g := openMarked(t, 4, nil)
	send := func(off int64) equeue.SendBackResult {
		t.Helper()
		res, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: off, DeadLetter: true})
		require.NoError(t, err)
		return res
	}
	for off := range int64(4) {
		send(off)
	}
	require.Equal(t, 4, sentBackMarks(t, fs))

	// A commit to 2 deletes the marks of offsets 0 and 1, in its own write.
	var commitOps []store.MetaOp
	fs.OnWrite(func(b *store.Batch) error {
		commitOps = append(commitOps, b.Meta...)
		return nil
	})
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 2}}}))
	fs.OnWrite(nil)
	deleted := 0
	for _, op := range commitOps {
		if op.Delete && string(op.Key[:4]) == "sbk/" {
			deleted++
		}
	}
	assert.Equal(t, 2, deleted, "the commit's write deletes the marks it passes")
	assert.Equal(t, 2, sentBackMarks(t, fs))
	assert.True(t, send(2).Duplicate, "a mark above the commit stays")

	// A reset backwards deletes the rest: offset 2 fails again and is
	// stored again.
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToOffsets,
		Offsets: map[equeue.QueueRef]int64{{Topic: "t", Queue: 0}: 2}}))
	assert.Zero(t, sentBackMarks(t, fs))
	g, res := joinAndPull(t, e, "g", "m", "t")
	require.NotEmpty(t, res.Messages)
	res2, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 2, DeadLetter: true})
	require.NoError(t, err)
	assert.False(t, res2.Duplicate)
	assert.Equal(t, int64(5), queueEnd(t, e, equeue.DLQTopic("g")))
	require.Equal(t, 1, sentBackMarks(t, fs))

	// Deleting the topic deletes its marks.
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	assert.Zero(t, sentBackMarks(t, fs))

	// Deleting the group deletes its marks.
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err = newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("y")})
	require.NoError(t, err)
	g, _ = joinAndPull(t, e, "g", "m", "t")
	send(0)
	require.Equal(t, 1, sentBackMarks(t, fs))
	require.NoError(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}))
	assert.Zero(t, sentBackMarks(t, fs))
}

// Each member of a broadcasting group dead-letters its own delivery: the
// marks are per member.
func TestSendBack_BroadcastMarksArePerMember(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
	require.NoError(t, err)
	for _, m := range []string{"a", "b"} {
		a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "bg", Member: m, Model: equeue.Broadcasting,
			Subscriptions: []equeue.Subscription{{Topic: "t"}}})
		require.NoError(t, err)
		require.Len(t, a.Queues, 1)
		g := a.Queues[0]
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Group: "bg", Member: m, Epoch: g.Epoch})
		require.NoError(t, err)
		require.Len(t, res.Messages, 1)
		req := &equeue.SendBackRequest{Group: "bg", Member: m, Grant: g, Offset: 0, DeadLetter: true}
		first, err := e.SendBack(ctx, req)
		require.NoError(t, err)
		assert.False(t, first.Duplicate, "%s's own dead letter", m)
		again, err := e.SendBack(ctx, req)
		require.NoError(t, err)
		assert.True(t, again.Duplicate)
	}
	assert.Equal(t, int64(2), queueEnd(t, e, equeue.DLQTopic("bg")))
}

// Send-backs of one message at once store one copy: the others wait for
// its write and answer as duplicates.
func TestSendBack_ConcurrentRepeatsStoreOnce(t *testing.T) {
	ctx := ctxT(t)
	e, fs, g := openMarked(t, 1, nil)
	hold := make(chan struct{})
	var once sync.Once
	held := make(chan struct{})
	fs.OnWrite(func(b *store.Batch) error {
		for _, op := range b.Meta {
			if string(op.Key[:4]) == "sbk/" {
				once.Do(func() { close(held) })
				<-hold
			}
		}
		return nil
	})
	req := &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true}
	const callers = 8
	results := make(chan equeue.SendBackResult, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			res, err := e.SendBack(ctx, req)
			assert.NoError(t, err)
			results <- res
		})
	}
	<-held // one write holds the mark; the other calls wait for it
	time.Sleep(20 * time.Millisecond)
	close(hold)
	wg.Wait()
	close(results)
	stored := 0
	for res := range results {
		if !res.Duplicate {
			stored++
		}
		assert.Equal(t, equeue.DLQTopic("g"), res.Topic)
	}
	assert.Equal(t, 1, stored)
	assert.Equal(t, int64(1), queueEnd(t, e, equeue.DLQTopic("g")))
}

// Failures: a send-back whose write fails leaves no mark (the next one
// stores the copy); one whose context ends while its write is held is of
// unknown outcome, and the next one waits for that write and answers from
// its mark.
func TestSendBack_MarkFollowsTheOutcome(t *testing.T) {
	ctx := ctxT(t)
	e, fs, g := openMarked(t, 2, nil)
	req := &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true}
	fs.FailWrites(1)
	_, err := e.SendBack(ctx, req)
	require.ErrorIs(t, err, faultstore.ErrInjected)
	assert.Zero(t, sentBackMarks(t, fs))
	res, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	assert.False(t, res.Duplicate, "not stored before: stored now")
	assert.Equal(t, int64(1), queueEnd(t, e, equeue.DLQTopic("g")))

	hold := make(chan struct{})
	fs.OnWrite(func(b *store.Batch) error {
		for _, op := range b.Meta {
			if string(op.Key[:4]) == "sbk/" {
				<-hold
			}
		}
		return nil
	})
	req.Offset = 1
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = e.SendBack(short, req)
	require.ErrorIs(t, err, equeue.ErrIndeterminate)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	answered := make(chan equeue.SendBackResult, 1)
	go func() {
		res, err := e.SendBack(ctx, req)
		assert.NoError(t, err)
		answered <- res
	}()
	select {
	case <-answered:
		t.Fatal("answered while the first write was held")
	case <-time.After(50 * time.Millisecond):
	}
	close(hold)
	res = <-answered
	assert.True(t, res.Duplicate, "the held write stored it")
	assert.Equal(t, int64(2), queueEnd(t, e, equeue.DLQTopic("g")))
}

// A garbled mark (its value, or its key) was refused at Open, which then
// failed for ever: it is dropped instead, counted and deleted, as one the
// store cannot read back (TestOpen_DropsALostSendBackMark).
func TestSendBack_GarbledMarkIsDroppedAtOpen(t *testing.T) {
	st := store.NewMemory()
	require.NoError(t, st.Write(&store.Batch{Meta: []store.MetaOp{
		{Key: []byte("sbk/g\x00\x00t\x000\x00\x00\x00\x00\x00\x00\x00\x00\x01"), Value: []byte{7}},
		{Key: []byte("sbk/garbled"), Value: []byte{7}},
	}}))
	e, err := equeue.Open("", &equeue.Options{Store: keepOpen{st}})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	assert.Equal(t, uint64(2), e.Stats().CorruptRecords)
	assert.Zero(t, metaKeys(t, st, "sbk/"), "deleted")
}

// More marks than one write holds: the commit that passes them all, and
// the deletion of their topic, still succeed, and leave none.
func TestSendBack_MoreMarksThanAWriteHolds(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	maxOps := fs.Limits().MaxEntries
	require.Positive(t, maxOps)
	n := int64(maxOps) + 700
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	for i := int64(0); i < n; i += 500 {
		msgs := make([]*equeue.Message, min(500, n-i))
		for j := range msgs {
			msgs[j] = &equeue.Message{Body: []byte("x")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	g, res := joinAndPull(t, e, "g", "m", "t")
	for next := res.NextOffset; next < n; {
		r, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: next, Max: equeue.MaxPullBatch, Group: "g", Member: "m", Epoch: g.Epoch})
		require.NoError(t, err)
		next = r.NextOffset
	}
	sendAll := func(grant equeue.Grant) {
		offs := make(chan int64, n)
		for o := range n {
			offs <- o
		}
		close(offs)
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for o := range offs {
					_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: o, DeadLetter: true})
					assert.NoError(t, err)
				}
			})
		}
		wg.Wait()
	}
	sendAll(g)
	require.Equal(t, int(n), sentBackMarks(t, fs))
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: n - 1}}}))
	assert.Equal(t, 1, sentBackMarks(t, fs), "the commit deleted every mark it passed")

	// The same through a reset and the topic's deletion.
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	assert.Zero(t, sentBackMarks(t, fs))
	g, _ = joinAndPull(t, e, "g", "m", "t")
	for next := int64(0); next < n; {
		r, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: next, Max: equeue.MaxPullBatch, Group: "g", Member: "m", Epoch: g.Epoch})
		require.NoError(t, err)
		next = r.NextOffset
	}
	sendAll(g)
	require.Equal(t, int(n), sentBackMarks(t, fs))
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	assert.Zero(t, sentBackMarks(t, fs))
}

// keepOpenStore is a store that outlives the engines opened on it.
type keepOpenStore struct{ *faultstore.FS }

func (keepOpenStore) Close() error { return nil }

// holdMarkWrites holds every store write of fs that writes a send-back
// mark until hold is closed; held is closed when the first one comes.
func holdMarkWrites(fs *faultstore.FS) (held, hold chan struct{}) {
	held, hold = make(chan struct{}), make(chan struct{})
	var once sync.Once
	fs.OnWrite(func(b *store.Batch) error {
		for _, op := range b.Meta {
			if !op.Delete && bytes.HasPrefix(op.Key, []byte("sbk/")) {
				once.Do(func() { close(held) })
				<-hold
			}
		}
		return nil
	})
	return held, hold
}

// openOn opens an engine on fs, which Close leaves open for the next.
func openOn(t *testing.T, fs *faultstore.FS) *equeue.Engine {
	t.Helper()
	e, err := equeue.Open("", &equeue.Options{Store: keepOpenStore{fs}})
	require.NoError(t, err)
	return e
}

// A change that must see every mark (deleting the topic or the group,
// resetting the offsets) while a send-back's write is held: once both
// returned, no mark of that send-back is left, and after a restart a new
// failure at the same place is stored, not answered as a duplicate.
func TestSendBack_ChangesRacingAHeldSendBack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(ctx context.Context, e *equeue.Engine) error
		after  func(t *testing.T, e *equeue.Engine)
	}{
		{"delete topic", func(ctx context.Context, e *equeue.Engine) error { return e.DeleteTopic(ctx, "t") },
			func(t *testing.T, e *equeue.Engine) {
				require.NoError(t, e.CreateTopic(ctxT(t), "t", 1))
				_, err := e.Append(ctxT(t), &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("new")}}})
				require.NoError(t, err)
			}},
		{"delete group", func(ctx context.Context, e *equeue.Engine) error {
			return e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true})
		}, func(*testing.T, *equeue.Engine) {}},
		{"reset offsets", func(ctx context.Context, e *equeue.Engine) error {
			return e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest})
		}, func(*testing.T, *equeue.Engine) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := ctxT(t)
			fs := faultstore.New(store.NewMemory())
			e, err := equeue.Open("", &equeue.Options{Store: keepOpenStore{fs}})
			require.NoError(t, err)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("old")}}})
			require.NoError(t, err)
			g, _ := joinAndPull(t, e, "g", "m", "t")
			held, hold := make(chan struct{}), make(chan struct{})
			var once sync.Once
			fs.OnWrite(func(b *store.Batch) error {
				for _, op := range b.Meta {
					if !op.Delete && len(op.Key) > 4 && string(op.Key[:4]) == "sbk/" {
						once.Do(func() { close(held) })
						<-hold
					}
				}
				return nil
			})
			sent, changed := make(chan error, 1), make(chan error, 1)
			go func() {
				_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true})
				sent <- err
			}()
			<-held
			go func() { changed <- tc.change(ctx, e) }()
			time.Sleep(50 * time.Millisecond) // the change waits for the held write
			close(hold)
			require.NoError(t, <-sent)
			require.NoError(t, <-changed)
			fs.OnWrite(nil)
			assert.Zero(t, sentBackMarks(t, fs), "no mark left behind")
			require.NoError(t, e.Close())

			e, err = equeue.Open("", &equeue.Options{Store: keepOpenStore{fs}})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			tc.after(t, e)
			a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m2", From: equeue.ConsumeFromEarliest,
				Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.Len(t, a.Queues, 1)
			res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "m2", Epoch: a.Queues[0].Epoch})
			require.NoError(t, err)
			require.Len(t, res.Messages, 1)
			r, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m2", Grant: a.Queues[0], Offset: 0, DeadLetter: true})
			require.NoError(t, err)
			assert.False(t, r.Duplicate, "a failure after the change is stored: %q", res.Messages[0].Body)
		})
	}
}

// A mark answers only for the message it was written for: one left in the
// store by a topic deleted and created again (a deletion whose mark
// writes failed) does not answer for the new topic's message at that
// offset, and one the group's commit passed (a commit whose later mark
// deletions failed) does not answer for the message read again below the
// committed offset.
func TestSendBack_MarkAnswersOnlyForItsMessage(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	open := func() *equeue.Engine { return openOn(t, fs) }
	e := open()
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	send := func(body string) {
		_, err := newProducer(t, e, nil).Send(ctx, &equeue.Message{Topic: "t", Body: []byte(body)})
		require.NoError(t, err)
	}
	send("old")
	g, _ := joinAndPull(t, e, "g", "m", "t")
	_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true})
	require.NoError(t, err)
	var mark store.MetaOp
	require.NoError(t, fs.ScanMeta([]byte("sbk/"), func(k, v []byte) error {
		mark = store.MetaOp{Key: bytes.Clone(k), Value: bytes.Clone(v)}
		return nil
	}))
	putBack := func() { // as if its deletion had failed, then a restart
		t.Helper()
		require.NoError(t, fs.Write(&store.Batch{Meta: []store.MetaOp{mark}}))
		require.NoError(t, e.Close())
		e = open()
	}

	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
	require.NoError(t, e.DeleteTopic(ctx, "t"))
	require.Zero(t, sentBackMarks(t, fs))
	putBack()
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	send("new")
	g, _ = joinAndPull(t, e, "g", "m", "t")
	res, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true})
	require.NoError(t, err)
	assert.False(t, res.Duplicate, "the earlier topic's mark")
	assert.Equal(t, int64(2), queueEnd(t, e, equeue.DLQTopic("g")))

	// Now a mark of this topic below the committed offset.
	require.NoError(t, fs.ScanMeta([]byte("sbk/"), func(k, v []byte) error {
		mark = store.MetaOp{Key: bytes.Clone(k), Value: bytes.Clone(v)}
		return nil
	}))
	send("next")
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 1}}}))
	require.Zero(t, sentBackMarks(t, fs))
	putBack()
	g, _ = joinAndPull(t, e, "g", "m", "t") // from the committed offset, 1
	again, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Group: "g", Member: "m", Epoch: g.Epoch})
	require.NoError(t, err)
	require.NotEmpty(t, again.Messages)
	res, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true})
	require.NoError(t, err)
	assert.False(t, res.Duplicate, "a mark the commit passed")
	assert.Equal(t, int64(3), queueEnd(t, e, equeue.DLQTopic("g")))
}

// A reset whose write fails changes nothing: its marks stay, and a
// send-back repeated under the grant it did not fence is answered as a
// duplicate. A commit that moves the offset back deletes the marks at and
// above it too: those messages are handled again, failures included.
func TestSendBack_FailedResetKeepsMarksAndCommitBackDropsThem(t *testing.T) {
	ctx := ctxT(t)
	e, fs, g := openMarked(t, 3, nil)
	req := &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, DeadLetter: true}
	_, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	fs.OnWrite(func(b *store.Batch) error { // the reset's write fails
		for _, op := range b.Meta {
			if bytes.HasPrefix(op.Key, []byte("off/")) {
				return errors.New("injected")
			}
		}
		return nil
	})
	require.Error(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	fs.OnWrite(nil)
	again, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	assert.True(t, again.Duplicate)
	assert.Equal(t, int64(1), queueEnd(t, e, equeue.DLQTopic("g")))

	// Commit to 2, send back 2, then commit back to 1.
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 2}}}))
	req.Offset = 2
	_, err = e.SendBack(ctx, req)
	require.NoError(t, err)
	require.Equal(t, 1, sentBackMarks(t, fs))
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 1}}}))
	assert.Zero(t, sentBackMarks(t, fs), "moved back: the mark at 2 goes")
	res, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	assert.False(t, res.Duplicate)
	assert.Equal(t, int64(3), queueEnd(t, e, equeue.DLQTopic("g")))
}

// pullAll pulls topic t's queue 0 from 0 to n under g.
func pullAll(t *testing.T, e *equeue.Engine, g equeue.Grant, member string, n int64) {
	t.Helper()
	for next := int64(0); next < n; {
		r, err := e.Pull(ctxT(t), &equeue.PullRequest{Topic: "t", Offset: next, Max: equeue.MaxPullBatch, Group: "g", Member: member, Epoch: g.Epoch})
		require.NoError(t, err)
		next = r.NextOffset
	}
}

// onlyMarkDeletes reports whether b is one of the later mark-deletion writes.
func onlyMarkDeletes(b *store.Batch) bool {
	if len(b.Meta) == 0 || len(b.Entries) > 0 {
		return false
	}
	for _, op := range b.Meta {
		if !op.Delete || !bytes.HasPrefix(op.Key, []byte("sbk/")) {
			return false
		}
	}
	return true
}

// A commit moving the offset back waits, as a reset does, for a send-back
// being written: the send-back's mark, written first, does not outlive the
// move and answer for the message handled again.
func TestSendBack_CommitBackWaitsForAHeldSendBack(t *testing.T) {
	ctx := ctxT(t)
	e, fs, g := openMarked(t, 3, nil)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 2}}}))
	held, hold := holdMarkWrites(fs)
	req := &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 2, DeadLetter: true}
	sent, back := make(chan error, 1), make(chan error, 1)
	go func() { _, err := e.SendBack(ctx, req); sent <- err }()
	<-held
	go func() {
		back <- e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
			Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 1}}})
	}()
	time.Sleep(50 * time.Millisecond) // the commit listed the marks, its write waits
	close(hold)
	require.NoError(t, <-sent)
	require.NoError(t, <-back)
	fs.OnWrite(nil)
	assert.Zero(t, sentBackMarks(t, fs), "the commit moved the offset back below the mark (written first)")
	res, err := e.SendBack(ctx, req)
	require.NoError(t, err)
	assert.False(t, res.Duplicate)
}

// A group's offsets committed from outside (CommitGroupOffsets, the Kafka
// listener's groups) moving back past a send-back of a member that has
// just left, whose write is still queued: the commit waits for that write
// and deletes its mark, so the message, handled again after the move, is
// sent back again when it fails again.
func TestSendBack_ExternalCommitBackWaitsForAHeldSendBack(t *testing.T) {
	ctx := ctxT(t)
	e, fs, g := openMarked(t, 3, nil)
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 2}}}))
	held, hold := holdMarkWrites(fs)
	sent, back := make(chan error, 1), make(chan error, 1)
	go func() {
		_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 2, DeadLetter: true})
		sent <- err
	}()
	<-held
	require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
	q0 := equeue.QueueRef{Topic: "t", Queue: 0}
	go func() { back <- e.CommitGroupOffsets(ctx, "g", map[equeue.QueueRef]int64{q0: 1}) }()
	time.Sleep(50 * time.Millisecond) // the commit listed the marks, its write waits
	close(hold)
	require.NoError(t, <-sent)
	require.NoError(t, <-back)
	fs.OnWrite(nil)
	assert.Zero(t, sentBackMarks(t, fs), "the commit moved the offset back below the mark (written first)")
	offs, err := e.GroupOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Equal(t, int64(1), offs[q0])

	g2, res := joinAndPull(t, e, "g", "m2", "t")
	require.Len(t, res.Messages, 3)
	again, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m2", Grant: g2, Offset: 2, DeadLetter: true})
	require.NoError(t, err)
	assert.False(t, again.Duplicate, "handled again after the move back: a new failure is stored")
	assert.Equal(t, int64(2), queueEnd(t, e, equeue.DLQTopic("g")), "two dead letters: one per failure")
}

// A move back (a reset, or a commit moving the offset back) past more
// marks than its own write holds: when the writes deleting the others
// fail, it fails and moves nothing, the marks staying with the offsets;
// when they succeed, no mark is left, and after a restart the messages
// handled again are sent back again.
func TestSendBack_MoveBackPastManyMarks(t *testing.T) {
	for _, how := range []string{"commit back", "reset"} {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			fs := faultstore.New(store.NewMemory())
			open := func() *equeue.Engine { return openOn(t, fs) }
			e := open()
			const n = 600
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			msgs := make([]*equeue.Message, n)
			for i := range msgs {
				msgs[i] = &equeue.Message{Body: []byte("x")}
			}
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
			require.NoError(t, err)
			g, _ := joinAndPull(t, e, "g", "m", "t")
			pullAll(t, e, g, "m", n)
			require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
				Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 1}}}))
			for o := int64(1); o < n; o++ {
				_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: o, DeadLetter: true})
				require.NoError(t, err)
			}
			move := func() error {
				if how == "reset" {
					return e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest})
				}
				return e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
					Offsets: []equeue.OffsetCommit{{Grant: g, Offset: 0}}})
			}
			if how == "reset" {
				require.NoError(t, e.LeaveGroup(ctx, &equeue.LeaveRequest{Group: "g", Member: "m"}))
			}
			fs.OnWrite(func(b *store.Batch) error {
				if onlyMarkDeletes(b) {
					return errors.New("injected")
				}
				return nil
			})
			require.Error(t, move())
			fs.OnWrite(nil)
			offs, err := e.GroupOffsets(ctx, "g")
			require.NoError(t, err)
			assert.Equal(t, int64(1), offs[equeue.QueueRef{Topic: "t", Queue: 0}], "nothing moved")
			assert.Equal(t, n-1, sentBackMarks(t, fs), "the marks stay with the offsets")

			require.NoError(t, move())
			assert.Zero(t, sentBackMarks(t, fs))
			require.NoError(t, e.Close())
			e = open()
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			g, _ = joinAndPull(t, e, "g", "m2", "t")
			pullAll(t, e, g, "m2", n)
			dlq := queueEnd(t, e, equeue.DLQTopic("g"))
			res, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m2", Grant: g, Offset: n - 1, DeadLetter: true})
			require.NoError(t, err)
			assert.False(t, res.Duplicate, "handled again after the move back: its failure is stored")
			assert.Equal(t, dlq+1, queueEnd(t, e, equeue.DLQTopic("g")))
		})
	}
}
