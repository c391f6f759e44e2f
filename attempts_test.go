package equeue_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestConsumer_MaxAttemptsHonouredAcrossCloses: a poison job whose handler
// fails only because Close cancels it counts every run, whatever mode
// retries it: a concurrent clustering consumer sends it back through the
// retry topic as a counted attempt; consumers that retry in place (orderly
// ones, and broadcasting ones, which retry locally) store its attempt count
// with their offsets. With MaxAttempts 3 it runs exactly three times over
// close-and-restart cycles, each run seeing the count of the runs before,
// and then sits in the dead letters with 3 attempts.
func TestConsumer_MaxAttemptsHonouredAcrossCloses(t *testing.T) {
	modes := []struct {
		name    string
		model   equeue.MessageModel
		orderly bool
	}{
		{"concurrent", equeue.Clustering, false},
		{"orderly", equeue.Clustering, true},
		{"broadcasting", equeue.Broadcasting, false},
		{"orderly-broadcasting", equeue.Broadcasting, true},
	}
	for _, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			forTransports(t, func(t *testing.T, tr string) {
				testMaxAttemptsAcrossCloses(t, tr, mode.model, mode.orderly)
			})
		})
	}
}

func testMaxAttemptsAcrossCloses(t *testing.T, tr string, model equeue.MessageModel, orderly bool) {
	ctx := ctxT(t)
	e, b := openOver(t, tr, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	var runs atomic.Int64
	var seen []int // attempt counts the handler saw, in order
	seenCh := make(chan int, 64)
	opts := equeue.ConsumerOptions{Group: "g", ID: "w", Model: model, Orderly: orderly,
		Subscriptions: []equeue.Subscription{{Topic: "t"}}, MaxAttempts: 3,
		// In-place retries wait RetryDelay; a concurrent consumer's send-back
		// is due after RetryDelays, short so the next cycle receives it.
		RetryDelay: time.Hour, RetryDelays: []time.Duration{10 * time.Millisecond}, ShutdownTimeout: 20 * time.Millisecond,
		Handler: func(ctx context.Context, m *equeue.Message) error {
			runs.Add(1)
			seenCh <- m.Attempt
			<-ctx.Done() // fails only because Close stops it
			return ctx.Err()
		}}
	p := newProducer(t, b, nil)
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("poison")})
	require.NoError(t, err)
	deadLetters := func() []equeue.DLQEntry {
		dl, err := e.DeadLetters(ctx, "g", 0, 10)
		require.NoError(t, err)
		return dl
	}
	for cycle := 0; cycle < 6 && len(deadLetters()) == 0; cycle++ {
		c, err := equeue.NewConsumer(b, opts)
		require.NoError(t, err)
		before := runs.Load()
		require.NoError(t, c.Start(ctx))
		eventually(t, 30*time.Second, func() bool { return runs.Load() > before }, "cycle %d: the job did not run", cycle)
		require.NoError(t, c.Close(), "cycle %d", cycle)
	}
	close(seenCh)
	for a := range seenCh {
		seen = append(seen, a)
	}
	dl := deadLetters()
	require.Len(t, dl, 1, "the job ends in the dead letters (attempts seen: %v)", seen)
	assert.Equal(t, 3, dl[0].Attempts)
	assert.Equal(t, int64(3), runs.Load(), "MaxAttempts caps the handler runs across closes")
	assert.Equal(t, []int{0, 1, 2}, seen, "each run carries the count of the runs before it")
}

// TestEngine_CommitAttemptsSurviveReopen: the attempts committed with an
// offset are stored with it (Badger), fetched back after a reopen, replaced
// by the next commit and dropped by an offset reset.
func TestEngine_CommitAttemptsSurviveReopen(t *testing.T) {
	ctx := ctxT(t)
	e, reopen := openEngine(t, "badger", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for i := 0; i < 3; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	require.NoError(t, p.Close())
	join := &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}}
	a, err := e.JoinGroup(ctx, join)
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	atts := []equeue.MessageAttempts{{Offset: 1, Attempts: 2}, {Offset: 2, Attempts: 5}}
	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 1, Attempts: atts}}}))

	e = reopen()
	a, err = e.JoinGroup(ctx, join)
	require.NoError(t, err)
	offs, err := e.FetchOffsets(ctx, "g", "m", a.Queues)
	require.NoError(t, err)
	require.Len(t, offs, 1)
	assert.Equal(t, int64(1), offs[0].Offset)
	assert.Equal(t, atts, offs[0].Attempts, "attempts are stored with the offset")

	require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
		Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 1, Attempts: atts[:1]}}}))
	offs, err = e.FetchOffsets(ctx, "g", "m", a.Queues)
	require.NoError(t, err)
	assert.Equal(t, atts[:1], offs[0].Attempts, "a commit with the same offset replaces the attempts")

	require.NoError(t, e.ResetOffsets(ctx, "g", equeue.ResetRequest{To: equeue.ResetToEarliest}))
	a, err = e.Heartbeat(ctx, &equeue.HeartbeatRequest{Group: "g", Member: "m", KnownVersion: -1})
	require.NoError(t, err)
	offs, err = e.FetchOffsets(ctx, "g", "m", a.Queues)
	require.NoError(t, err)
	assert.Equal(t, int64(0), offs[0].Offset)
	assert.Empty(t, offs[0].Attempts, "a reset drops the attempts")
}

// TestEngine_CommitAttemptsChecked: malformed attempts are refused with
// ErrInvalidArgument and change nothing.
func TestEngine_CommitAttemptsChecked(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	bad := map[string][]equeue.MessageAttempts{
		"below the offset":  {{Offset: 4, Attempts: 1}},
		"zero attempts":     {{Offset: 5, Attempts: 0}},
		"negative attempts": {{Offset: 5, Attempts: -1}},
		"not ascending":     {{Offset: 6, Attempts: 1}, {Offset: 5, Attempts: 1}},
		"duplicate offset":  {{Offset: 5, Attempts: 1}, {Offset: 5, Attempts: 2}},
		"too many":          make([]equeue.MessageAttempts, equeue.MaxCommitAttempts+1),
	}
	for i := range bad["too many"] {
		bad["too many"][i] = equeue.MessageAttempts{Offset: int64(5 + i), Attempts: 1}
	}
	for name, atts := range bad {
		err := e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
			Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 5, Attempts: atts}}})
		assert.ErrorIs(t, err, equeue.ErrInvalidArgument, name)
	}
	offs, err := e.FetchOffsets(ctx, "g", "m", a.Queues)
	require.NoError(t, err)
	assert.Equal(t, int64(0), offs[0].Offset, "a refused commit stores nothing")
	assert.Empty(t, offs[0].Attempts)
}

// TestEngine_CommitAttemptsFollowTheStore: a commit whose store write fails
// returns an error and leaves the stored attempts (and the engine's view of
// them) as they were; the next commit stores them.
func TestEngine_CommitAttemptsFollowTheStore(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	e, err := equeue.Open("", &equeue.Options{Store: fs})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}}})
	require.NoError(t, err)
	require.Len(t, a.Queues, 1)
	commit := func(n int) error {
		return e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m",
			Offsets: []equeue.OffsetCommit{{Grant: a.Queues[0], Offset: 0, Attempts: []equeue.MessageAttempts{{Offset: 0, Attempts: n}}}}})
	}
	fetched := func() []equeue.MessageAttempts {
		offs, err := e.FetchOffsets(ctx, "g", "m", a.Queues)
		require.NoError(t, err)
		return offs[0].Attempts
	}
	require.NoError(t, commit(1))
	fs.FailWrites(1)
	require.Error(t, commit(2), "the failed write is reported")
	assert.Equal(t, []equeue.MessageAttempts{{Offset: 0, Attempts: 1}}, fetched(), "memory follows the store: the old count stays")
	require.NoError(t, commit(2))
	assert.Equal(t, []equeue.MessageAttempts{{Offset: 0, Attempts: 2}}, fetched())
}

// TestConsumer_OrderlyHandoverCarriesAttempts: when an orderly queue moves
// to another member while its message keeps failing, the new owner goes on
// from the count the old one reached instead of starting again.
func TestConsumer_OrderlyHandoverCarriesAttempts(t *testing.T) {
	forTransports(t, func(t *testing.T, tr string) {
		ctx := ctxT(t)
		e, b := openOver(t, tr, "memory", nil)
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
		p := newProducer(t, b, nil)
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("poison")})
		require.NoError(t, err)
		oldRan := make(chan struct{}, 8)
		newSaw := make(chan int, 8)
		consumer := func(id string, h equeue.Handler) *equeue.Consumer {
			c, err := equeue.NewConsumer(b, equeue.ConsumerOptions{Group: "g", ID: id, Orderly: true,
				Subscriptions: []equeue.Subscription{{Topic: "t"}}, MaxAttempts: 10,
				RetryDelay: time.Hour, HandoffTimeout: 20 * time.Millisecond, Handler: h})
			require.NoError(t, err)
			require.NoError(t, c.Start(ctx))
			t.Cleanup(func() { _ = c.Close() })
			return c
		}
		// "z" owns the queue first; "a" sorts first, so the queue moves to it.
		consumer("z", func(ctx context.Context, m *equeue.Message) error {
			oldRan <- struct{}{}
			<-ctx.Done() // fails because the handover stops it
			return ctx.Err()
		})
		select {
		case <-oldRan:
		case <-ctx.Done():
			t.Fatal("the first owner did not run the message")
		}
		consumer("a", func(ctx context.Context, m *equeue.Message) error {
			newSaw <- m.Attempt
			return nil
		})
		select {
		case a := <-newSaw:
			assert.Equal(t, 1, a, "the new owner sees the run the old one made")
		case <-ctx.Done():
			t.Fatal("the new owner did not get the message")
		}
	})
}
