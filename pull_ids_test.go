package equeue_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
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
