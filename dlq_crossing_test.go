package equeue_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// dlqFixture makes dead letters of group "g" by hand: each message sent
// to topic "t" is pulled by member "m" and sent back as a dead letter.
// Like a clustering Consumer, the group consumes its retry topic, where
// Redrive sends its dead letters.
type dlqFixture struct {
	e     *equeue.Engine
	grant equeue.Grant
	next  int64 // the next offset of "t" to pull
}

func newDLQFixture(t *testing.T, e *equeue.Engine) *dlqFixture {
	t.Helper()
	ctx := ctxT(t)
	if _, err := e.Route(ctx, "t"); errors.Is(err, equeue.ErrTopicNotFound) {
		require.NoError(t, e.CreateTopic(ctx, "t", 1))
	}
	a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}})
	require.NoError(t, err)
	f := &dlqFixture{e: e, next: queueEnd(t, e, "t")}
	for _, q := range a.Queues {
		if q.Topic == "t" {
			f.grant = q
		}
	}
	require.Equal(t, "t", f.grant.Topic)
	return f
}

// fail sends n messages with body and dead-letters them.
func (f *dlqFixture) fail(t *testing.T, body string, n int) {
	t.Helper()
	ctx := ctxT(t)
	msgs := make([]*equeue.Message, n)
	for i := range msgs {
		msgs[i] = &equeue.Message{Body: []byte(body)}
	}
	_, err := f.e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
	require.NoError(t, err)
	res, err := f.e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: f.next, Max: n, Group: "g", Member: "m", Epoch: f.grant.Epoch})
	require.NoError(t, err)
	require.Len(t, res.Messages, n)
	for _, m := range res.Messages {
		_, err := f.e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: f.grant, Offset: m.Offset, DeadLetter: true})
		require.NoError(t, err)
	}
	f.next += int64(n)
}

// redrivenMarks counts the redriven marks in st.
func redrivenMarks(t *testing.T, st interface {
	ScanMeta(prefix []byte, fn func(key, value []byte) error) error
}) int {
	t.Helper()
	n := 0
	require.NoError(t, st.ScanMeta([]byte("dlqr/"), func(_, _ []byte) error {
		n++
		return nil
	}))
	return n
}

// A dead letter stored after the group's dead-letter topic was deleted and
// created again is not "redriven" because one at the same offset of the
// deleted topic was: a mark answers only for the topic it was written
// for, whether the deletion's tidying of the marks went through or failed,
// and across a reopen.
func TestDLQ_RedrivenMarkDoesNotOutliveItsDLQTopic(t *testing.T) {
	for _, how := range []string{"tidied", "tidying failed", "tidying failed, reopened"} {
		t.Run(how, func(t *testing.T) {
			ctx := ctxT(t)
			fs := faultstore.New(store.NewMemory())
			open := func() *equeue.Engine { return openOn(t, fs) }
			e := open()
			defer func() { require.NoError(t, e.Close()) }()
			f := newDLQFixture(t, e)
			f.fail(t, "first", 1)
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			require.Len(t, dls, 1)
			require.True(t, dls[0].Redriven)

			if how != "tidied" {
				fs.OnWrite(func(b *store.Batch) error {
					for _, op := range b.Meta {
						if op.Delete && bytes.HasPrefix(op.Key, []byte("dlqr/")) {
							return errors.New("injected")
						}
					}
					return nil
				})
			}
			require.NoError(t, e.DeleteTopic(ctx, equeue.DLQTopic("g")))
			fs.OnWrite(nil)
			if how == "tidied" {
				assert.Zero(t, redrivenMarks(t, fs), "the deletion deleted the topic's marks")
			} else {
				require.Equal(t, 1, redrivenMarks(t, fs), "the mark outlived its topic")
			}
			if how == "tidying failed, reopened" {
				require.NoError(t, e.Close())
				e = open()
			}

			f = newDLQFixture(t, e)
			f.fail(t, "second", 1)
			dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
			require.NoError(t, err)
			require.Len(t, dls, 1)
			require.Equal(t, "second", string(dls[0].Message.Body))
			require.Zero(t, dls[0].Offset)
			assert.False(t, dls[0].Redriven, "a new dead letter was never redriven")
			n, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
			require.NoError(t, err)
			assert.Equal(t, 1, n, "the new dead letter is redriven")
		})
	}
}

// Two redrives of all of a group's dead letters at once send each dead
// letter once between them.
func TestDLQ_ConcurrentRedrivesSendEachOnce(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	f := newDLQFixture(t, e)
	const n = 300
	f.fail(t, "x", n)
	var wg sync.WaitGroup
	sent := make([]int, 2)
	for i := range sent {
		wg.Go(func() {
			var err error
			sent[i], err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	assert.Equal(t, n, sent[0]+sent[1], "sent by the two redrives: %v", sent)
	assert.Equal(t, int64(n), queueEnd(t, e, equeue.RetryTopic("g")), "each dead letter came back once")
}

// Redriven marks written before they named their dead-letter topic: Open
// gives them the topic there is, so they keep answering for it (and go
// with it when it is deleted), and drops those of a group that has none,
// whose dead letters to come were never redriven.
func TestDLQ_RedrivenMarksOfTheFirstFormat(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	open := func() *equeue.Engine { return openOn(t, fs) }
	e := open()
	f := newDLQFixture(t, e)
	f.fail(t, "x", 2)
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0}})
	require.NoError(t, err)
	require.Equal(t, 1, n)
	require.NoError(t, e.Close())
	// As the first format wrote them: the mark of g's dead letter 0, and
	// one of group "h", which has no dead-letter topic.
	first := func(group string, off uint64) store.MetaOp {
		k := append([]byte("dlqr/"+group+"\x00"), binary.BigEndian.AppendUint64(nil, off)...)
		return store.MetaOp{Key: k, Value: []byte{1}}
	}
	require.NoError(t, fs.Write(&store.Batch{Meta: []store.MetaOp{first("g", 0), first("h", 0)}}))

	e = open()
	defer func() { require.NoError(t, e.Close()) }()
	dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, 2)
	assert.True(t, dls[0].Redriven)
	assert.False(t, dls[1].Redriven)
	assert.Equal(t, 1, redrivenMarks(t, fs), "h's mark is gone")

	require.NoError(t, e.DeleteTopic(ctx, equeue.DLQTopic("g")))
	assert.Zero(t, redrivenMarks(t, fs), "g's mark went with its topic")
	f = newDLQFixture(t, e)
	f.fail(t, "y", 1)
	dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	assert.False(t, dls[0].Redriven)
}

// A redriven dead letter keeps its time-to-live: the copy sent back to the
// group's retry topic, or with ToTopic to the topic, expires when the
// original did, so no consumer receives it later.
func TestDLQ_RedriveKeepsTheTTL(t *testing.T) {
	for _, toTopic := range []bool{false, true} {
		t.Run(fmt.Sprintf("ToTopic=%v", toTopic), func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "memory", nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Handler: func(ctx context.Context, m *equeue.Message) error { return equeue.DeadLetter(errors.New("bad")) }})
			p := newProducer(t, e, nil)
			expires := time.Now().Add(time.Hour).Truncate(time.Millisecond)
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x"), ExpiresAt: expires})
			require.NoError(t, err)
			var dls []equeue.DLQEntry
			eventually(t, 10*time.Second, func() bool {
				dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err)
				return len(dls) == 1
			}, "one dead letter")
			require.True(t, dls[0].Message.ExpiresAt.Equal(expires), "the dead letter keeps its expiry")
			require.NoError(t, c.Close())
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: toTopic})
			require.NoError(t, err)
			require.Equal(t, 1, n)
			pull := &equeue.PullRequest{Topic: equeue.RetryTopic("g"), Queue: 0, Offset: 0}
			if toTopic {
				pull = &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 1}
			}
			res, err := e.Pull(ctx, pull)
			require.NoError(t, err)
			require.Len(t, res.Messages, 1)
			require.True(t, res.Messages[0].ExpiresAt.Equal(expires), "the redriven copy expires with the original, not %v", res.Messages[0].ExpiresAt)
		})
	}
}

// Expired dead letters ahead of a live one do not end the listing: an empty
// page means no dead letter at or past From.
func TestDLQ_ListDeadLettersPassesExpiredOnes(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	// Orderly: the dead letters are in the order the messages were sent.
	startConsumer(t, e, equeue.ConsumerOptions{Group: "g", ID: "c", Subscriptions: []equeue.Subscription{{Topic: "t"}}, Orderly: true,
		Handler: func(ctx context.Context, m *equeue.Message) error { return equeue.DeadLetter(errors.New("bad")) }})
	p := newProducer(t, e, nil)
	expires := time.Now().Add(3 * time.Second)
	const short = 10
	for i := 0; i < short; i++ {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("short"), ExpiresAt: expires})
		require.NoError(t, err)
	}
	_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("live")})
	require.NoError(t, err)
	eventually(t, 10*time.Second, func() bool {
		dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{Max: 100})
		require.NoError(t, err)
		return len(dls) == short+1
	}, "every message dead-lettered")
	eventually(t, 10*time.Second, func() bool { return time.Now().After(expires) }, "the short ones expired")
	dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{From: 0, Max: 1})
	require.NoError(t, err)
	require.Len(t, dls, 1, "the live dead letter is listed")
	require.Equal(t, "live", string(dls[0].Message.Body))
	require.EqualValues(t, short, dls[0].Offset)
}

// A retry whose delay outlasts its message's life is stored (and expires
// unseen): only a producer's own delayed send that would expire before its
// delivery is refused.
func TestRetry_DelayPastTheExpiryIsStored(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("x"), TTL: time.Minute}}})
	require.NoError(t, err)
	g, res := joinAndPull(t, e, "g", "m", "t")
	require.Len(t, res.Messages, 1)
	_, err = e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Delay: 2 * time.Minute})
	require.NoError(t, err)
}

// A redriven mark of the first format that Open could not give its topic
// (the write failed: "the next open tries again") answers for the
// dead-letter topic there is. Deleting that topic deletes it with the
// topic's own marks: a dead letter of the topic created again after is
// not "redriven", and is redriven.
func TestDLQ_FirstFormatMarkGoesWithItsDLQTopic(t *testing.T) {
	ctx := ctxT(t)
	fs := faultstore.New(store.NewMemory())
	open := func() *equeue.Engine { return openOn(t, fs) }
	e := open()
	f := newDLQFixture(t, e)
	f.fail(t, "first", 1)
	require.NoError(t, e.Close())
	// The mark of g's dead letter 0, as the first format wrote it.
	k := append([]byte("dlqr/g\x00"), binary.BigEndian.AppendUint64(nil, 0)...)
	require.NoError(t, fs.Write(&store.Batch{Meta: []store.MetaOp{{Key: k, Value: []byte{1}}}}))

	// Open's migration of the mark fails.
	fs.OnWrite(func(b *store.Batch) error {
		for _, op := range b.Meta {
			if bytes.HasPrefix(op.Key, []byte("dlqr/")) {
				return errors.New("injected")
			}
		}
		return nil
	})
	e = open()
	defer func() { require.NoError(t, e.Close()) }()
	fs.OnWrite(nil)
	dls, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.True(t, dls[0].Redriven, "the first-format mark answers for the topic there is")

	require.NoError(t, e.DeleteTopic(ctx, equeue.DLQTopic("g")))
	f = newDLQFixture(t, e)
	f.fail(t, "second", 1)
	dls, err = e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	require.Len(t, dls, 1)
	require.Zero(t, dls[0].Offset)
	assert.False(t, dls[0].Redriven, "a dead letter of the new topic was never redriven")
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the new dead letter is redriven")
}

// A redrive naming an offset past the dead letters is refused with
// ErrInvalidArgument, also the largest offset there is (whose end, one
// past it, does not fit an int64), rather than answered "0 sent".
func TestDLQ_RedriveOfAnOffsetPastTheEndIsRefused(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	f := newDLQFixture(t, e)
	f.fail(t, "x", 1) // dead letter 0
	for _, off := range []int64{1, math.MaxInt64} {
		n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0, off}})
		assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "offset %d", off)
		assert.Zero(t, n)
	}
	n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0}})
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the dead letter is still there to redrive")
}
