package equeue_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestSend_ValuesTheRecordCannotHold sends messages whose Attempt or times
// a record cannot hold: each is refused with its documented error and
// nothing is stored, except a far-future ExpiresAt, which means "never":
// that message is stored and delivered (also after a restart).
func TestSend_ValuesTheRecordCannotHold(t *testing.T) {
	year := func(y int) time.Time { return time.Date(y, 6, 1, 0, 0, 0, 0, time.UTC) }
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, reopen := openEngine(t, kind, &equeue.Options{MaxDelay: math.MaxInt64, Retention: equeue.RetentionPolicy{Interval: -1}})
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			p := newProducer(t, e, nil)
			refused := []struct {
				name string
				m    equeue.Message
				want []error
			}{
				{"attempt -1", equeue.Message{Attempt: -1}, []error{equeue.ErrInvalidArgument}},
				{"attempt 1<<31", equeue.Message{Attempt: 1 << 31}, []error{equeue.ErrInvalidArgument}},
				{"born in 1500", equeue.Message{BornAt: year(1500)}, []error{equeue.ErrInvalidArgument}},
				{"born in 2300", equeue.Message{BornAt: year(2300)}, []error{equeue.ErrInvalidArgument}},
				{"born at the Unix epoch", equeue.Message{BornAt: time.Unix(0, 0)}, []error{equeue.ErrInvalidArgument}},
				{"expired in 1500", equeue.Message{ExpiresAt: year(1500)}, []error{equeue.ErrInvalidArgument}},
				{"delivered in 3000", equeue.Message{DeliverAt: year(3000)}, []error{equeue.ErrInvalidArgument, equeue.ErrInvalidDelay}},
			}
			for _, c := range refused {
				m := c.m
				m.Topic, m.Body = "t", []byte(c.name)
				_, err := p.Send(ctx, &m)
				for _, want := range c.want {
					assert.ErrorIs(t, err, want, c.name)
				}
			}
			info, err := e.Topic(ctx, "t")
			require.NoError(t, err)
			require.Equal(t, int64(0), info.Queues[0].MaxOffset, "no refused message was stored")

			far := &equeue.Message{Topic: "t", Body: []byte("never expires"), ExpiresAt: year(3000), Attempt: 1<<30 - 1, BornAt: year(1700)}
			r, err := p.Send(ctx, far)
			require.NoError(t, err)
			assert.Equal(t, year(3000), far.ExpiresAt, "the caller's message is not modified")
			ttl := &equeue.Message{Topic: "t", Body: []byte("290 years"), TTL: 290 * 365 * 24 * time.Hour}
			_, err = p.Send(ctx, ttl)
			require.NoError(t, err)

			check := func(e *equeue.Engine, when string) {
				t.Helper()
				pr, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: r.Queue, Offset: r.Offset})
				require.NoError(t, err)
				require.Len(t, pr.Messages, 2, "%s: both far-future messages are delivered, not expired", when)
				got := pr.Messages[0]
				assert.Equal(t, "never expires", string(got.Body), when)
				assert.True(t, got.ExpiresAt.IsZero(), "%s: an expiry after 2262 reads back as none", when)
				assert.Equal(t, 1<<30-1, got.Attempt, when)
				assert.True(t, got.BornAt.Equal(year(1700)), "%s: born-at %v", when, got.BornAt)
				assert.True(t, pr.Messages[1].ExpiresAt.IsZero(), "%s: a TTL reaching past 2262 means never", when)
				assert.Zero(t, pr.Expired, when)
				assert.Zero(t, e.Stats().ExpiredMessages, when)
				assert.Zero(t, e.Stats().CorruptRecords, when)
			}
			check(e, "in process")
			if kind == "badger" {
				check(reopen(), "after reopen")
			}
		})
	}
}
