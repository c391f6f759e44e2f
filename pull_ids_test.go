package equeue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// TestPull_IDsOfAMixedRead crosses the read path's shared ID string with
// what a read skips: one read holds messages with engine IDs and with
// their producer's own, some filtered out by tag and some expired. Every
// message returned carries the ID its Send reported, and so after a
// reopen (Badger), where the records are read from disk.
func TestPull_IDsOfAMixedRead(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, reopen := openEngine(t, kind, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			p := newProducer(t, e, nil)
			want := map[int64]string{} // offset -> ID, of the messages a pull must return
			for i := range 60 {
				m := &equeue.Message{Topic: "t", Tag: []string{"A", "B"}[i%2], Body: fmt.Appendf(nil, "%d", i)}
				if i%3 == 0 {
					m.ID = fmt.Sprintf("producer-%d", i)
				}
				if i%5 == 0 {
					m.TTL = time.Millisecond
				}
				r, err := p.Send(ctx, m)
				require.NoError(t, err)
				require.NotEmpty(t, r.ID)
				if m.ID != "" {
					require.Equal(t, m.ID, r.ID)
				}
				if i%2 == 0 && i%5 != 0 {
					want[r.Offset] = r.ID
				}
			}
			time.Sleep(5 * time.Millisecond) // the TTL messages expire

			check := func(e *equeue.Engine) {
				t.Helper()
				got := map[int64]string{}
				for off := int64(0); off < 60; {
					res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 7, Filter: "A"})
					require.NoError(t, err)
					for _, m := range res.Messages {
						require.Equal(t, "A", m.Tag)
						got[m.Offset] = m.ID
					}
					require.Greater(t, res.NextOffset, off)
					off = res.NextOffset
				}
				require.Equal(t, want, got)
			}
			check(e)
			if kind == "badger" {
				check(reopen())
			}
		})
	}
}

// TestPull_IDsAcrossFailuresAndFeatures crosses the shared ID string with
// a refused write, a duplicate in a dedup window, a delayed message that
// becomes visible later and a record corrupted on the way out of the
// store: the refused message is not there, the duplicate is the original,
// the corrupt record is reported, and every other message carries the ID
// its Send reported.
func TestPull_IDsAcrossFailuresAndFeatures(t *testing.T) {
	ctx := ctxT(t)
	cs := &countingStore{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: cs})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, DedupWindow: time.Minute}))
	p := newProducer(t, e, nil)

	want := map[int64]string{} // offset -> ID
	send := func(m *equeue.Message) equeue.SendResult {
		t.Helper()
		r, err := p.Send(ctx, m)
		require.NoError(t, err)
		return r
	}
	for i := range 20 {
		m := &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "%d", i)}
		if i%4 == 0 {
			m.ID = fmt.Sprintf("order-%d", i)
		}
		if i == 7 { // refused by the store: not stored
			cs.failNext.Store(1)
			_, err := p.Send(ctx, m)
			require.Error(t, err)
			require.NotErrorIs(t, err, equeue.ErrIndeterminate)
			continue
		}
		r := send(m)
		want[r.Offset] = r.ID
	}
	dup := send(&equeue.Message{Topic: "t", ID: "order-8", Body: []byte("again")})
	require.True(t, dup.Duplicate)
	require.Equal(t, "order-8", want[dup.Offset])
	delayed := send(&equeue.Message{Topic: "t", Body: []byte("later"), Delay: 20 * time.Millisecond})
	require.True(t, delayed.Delayed)

	// The delayed message is moved to the queue with its ID.
	var last int64
	eventually(t, 5*time.Second, func() bool {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 0, Max: 100})
		require.NoError(t, err)
		last = res.NextOffset
		return res.NextOffset == int64(len(want))+1
	}, "the delayed message becomes visible")
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: last - 1, Max: 1})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	require.Equal(t, delayed.ID, res.Messages[0].ID)
	want[res.Messages[0].Offset] = delayed.ID

	flip := func(_ store.QueueID, off uint64, v []byte) []byte {
		if off == 5 {
			v = append([]byte(nil), v...)
			v[len(v)-1] ^= 0x40
		}
		return v
	}
	cs.corrupt.Store(&flip)
	got := map[int64]string{}
	var corrupt []int64
	for off := int64(0); off < last; {
		res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: off, Max: 6})
		require.NoError(t, err)
		for _, m := range res.Messages {
			got[m.Offset] = m.ID
		}
		corrupt = append(corrupt, res.Corrupt...)
		require.Greater(t, res.NextOffset, off)
		off = res.NextOffset
	}
	require.Equal(t, []int64{5}, corrupt)
	delete(want, 5)
	require.Equal(t, want, got)
}
