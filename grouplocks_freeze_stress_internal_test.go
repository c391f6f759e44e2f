package equeue

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/equeue-go/equeue/store"
)

// slowMetaStore makes every store write with a metadata operation take a
// little while: a slow disk, under which groups are frozen for long enough
// that listings and heartbeats read them frozen.
type slowMetaStore struct {
	Store
}

func (s slowMetaStore) Write(b *store.Batch) error {
	if len(b.Meta) > 0 {
		time.Sleep(200 * time.Microsecond)
	}
	return s.Store.Write(b)
}

// expectedGroupErr reports whether err is one a member or operator racing
// with resets, deletions and leaves is told.
func expectedGroupErr(err error) bool {
	return err == nil || errors.Is(err, ErrFenced) || errors.Is(err, ErrNotMember) ||
		errors.Is(err, ErrGroupNotFound) || errors.Is(err, ErrGroupHasMembers)
}

// TestGroupLocks_FreezeStress runs heartbeats (some long-polling),
// listings, resets, commits, offset fetches, joins and leaves and forced
// deletions of groups concurrently on a slow store: under the race
// detector it finds fields read from a frozen group while written, and it
// fails (rather than hangs) if a thaw waits on a reader that waits on the
// thawing lock holder; no helper goroutine of readLock outlives it.
func TestGroupLocks_FreezeStress(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	e, err := Open("", &Options{Store: slowMetaStore{store.NewMemory()}, Retention: RetentionPolicy{Interval: -1}})
	require.NoError(t, err)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	join := func(group, member string, model MessageModel) (Assignment, error) {
		return e.JoinGroup(ctx, &JoinRequest{Group: group, Member: member, Model: model, Subscriptions: []Subscription{{Topic: "t"}}})
	}
	type gm struct {
		group string
		model MessageModel
		ids   []string
	}
	groups := []gm{{"g", Clustering, []string{"m0", "m1", "m2"}}, {"b", Broadcasting, []string{"b0", "b1"}}}
	for _, g := range groups {
		for _, id := range g.ids {
			_, err := join(g.group, id, g.model)
			require.NoError(t, err)
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, 1024)
	check := func(what string, err error) {
		if !expectedGroupErr(err) {
			select {
			case errs <- fmt.Errorf("%s: %w", what, err):
			default:
			}
		}
	}
	for _, g := range groups {
		for _, id := range g.ids {
			wg.Add(1)
			go func() { // a member: heartbeats, fetches and commits its grants
				defer wg.Done()
				var a Assignment
				for i := range 40 {
					wait := time.Duration(0)
					if i%2 == 1 {
						wait = 2 * time.Millisecond
					}
					got, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: g.group, Member: id, KnownVersion: a.Version, Wait: wait})
					if errors.Is(err, ErrNotMember) {
						got, err = join(g.group, id, g.model)
					}
					check("heartbeat", err)
					if err != nil {
						continue
					}
					a = got
					if len(a.Queues) == 0 {
						continue
					}
					offs, err := e.FetchOffsets(ctx, g.group, id, a.Queues)
					check("fetch", err)
					if err != nil {
						continue
					}
					check("commit", e.CommitOffsets(ctx, &CommitRequest{Group: g.group, Member: id, Offsets: offs}))
				}
			}()
		}
	}
	wg.Add(1)
	go func() { // listings
		defer wg.Done()
		for range 60 {
			_, err := e.Groups(ctx)
			check("groups", err)
			_, err = e.Group(ctx, "g")
			check("group", err)
		}
	}()
	wg.Add(1)
	go func() { // resets of both groups
		defer wg.Done()
		for i := range 20 {
			to := []ResetTarget{ResetToLatest, ResetToEarliest, ResetToTime}[i%3]
			check("reset", e.ResetOffsets(ctx, groups[i%2].group, ResetRequest{To: to, Time: time.Now()}))
		}
	}()
	wg.Add(1)
	go func() { // a member that comes and goes
		defer wg.Done()
		for range 15 {
			_, err := join("g", "x", Clustering)
			check("join", err)
			check("leave", e.LeaveGroup(ctx, &LeaveRequest{Group: "g", Member: "x"}))
		}
	}()
	wg.Add(1)
	go func() { // a group made and deleted again and again, with a member's heartbeats
		defer wg.Done()
		for range 10 {
			_, err := join("d", "d0", Clustering)
			check("join d", err)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, err := e.Heartbeat(ctx, &HeartbeatRequest{Group: "d", Member: "d0", Wait: time.Millisecond})
				check("heartbeat d", err)
			}()
			check("delete d", e.DeleteGroup(ctx, "d", DeleteGroupOptions{Force: true}))
			<-done
		}
	}()
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-ctx.Done():
		buf := make([]byte, 1<<20)
		t.Fatalf("the workers never finished (deadlock?):\n%s", buf[:runtime.Stack(buf, true)])
	}
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	require.NoError(t, e.Close())
}
