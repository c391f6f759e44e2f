package equeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// TestFetchOffsets_StartsWithoutAStoreReadFreezeNoGroup: a member of a
// group starting from the earliest or the latest offset fetches where to
// start in queues the group has no offset for; those starts are the
// queues' bounds, read from memory, so the fetch does not freeze the
// group (groupfreeze.go) for them. The probe is a shared hold of the
// group's freeze lock, which a freeze waits for: the fetch returns while
// the test keeps it. FetchOffsets froze and thawed the group once per
// such queue, so it waited for the probe.
func TestFetchOffsets_StartsWithoutAStoreReadFreezeNoGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := Open("", &Options{Store: store.NewMemory(), Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	require.NoError(t, e.CreateTopic(ctx, "t", 3))
	for q := range 3 {
		_, err := e.Append(ctx, &AppendRequest{Topic: "t", Queue: q, Messages: []*Message{{Body: []byte("a")}, {Body: []byte("b")}}})
		require.NoError(t, err)
	}
	for name, from := range map[string]ConsumeFrom{"earliest": ConsumeFromEarliest, "latest": ConsumeFromLatest} {
		t.Run(name, func(t *testing.T) {
			a, err := e.JoinGroup(ctx, &JoinRequest{Group: name, Member: "m", Model: Clustering, From: from,
				Subscriptions: []Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.Len(t, a.Queues, 3)
			g, err := e.groups.group(name)
			require.NoError(t, err)

			g.fz.rw.RLock() // a freeze of g waits until the probe lets go
			type fetched struct {
				ocs []OffsetCommit
				err error
			}
			done := make(chan fetched, 1)
			go func() {
				ocs, err := e.FetchOffsets(ctx, name, "m", a.Queues)
				done <- fetched{ocs, err}
			}()
			var f fetched
			select {
			case f = <-done:
				g.fz.rw.RUnlock()
			case <-time.After(20 * time.Second): // a wait for the fetch, not a bound on it
				g.fz.rw.RUnlock()
				<-done
				require.FailNow(t, "FetchOffsets froze the group for starts that read no store")
			}
			require.NoError(t, f.err)
			require.Len(t, f.ocs, 3)
			want := map[ConsumeFrom]int64{ConsumeFromEarliest: 0, ConsumeFromLatest: 2}[from]
			for _, oc := range f.ocs {
				assert.Equal(t, want, oc.Offset, "start of %s", oc.QueueRef)
			}
		})
	}
}
