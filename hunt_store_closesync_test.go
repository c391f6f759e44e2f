package equeue_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// Close while the store holds a Sync that then fails: the sends written
// before and during that Sync are answered "unknown" (never "stored"),
// Close returns, a send after Close began is
// refused (not stored), and a reopen holds each unknown send at most once,
// the refused one never, with dense offsets and the unknown sends' offsets
// not reused.
func TestHuntStore_CloseDuringAFailingSync(t *testing.T) {
	r := newFaultRig(t, "badger", nil)
	require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
	inSync, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.FS.OnSync(func() error {
		held := false
		once.Do(func() { held = true; close(inSync); <-release })
		if held {
			return errors.New("injected fsync failure")
		}
		return nil
	})
	outcomes := make(chan error, 3)
	send := func(body string) {
		_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs(body)})
		outcomes <- err
	}
	writes := r.FS.Writes()
	go send("a")
	select { // a refusal before any Sync (a full disk, say) fails here, not by hanging
	case <-inSync:
	case err := <-outcomes:
		require.FailNow(t, "a was answered before its Sync", "%v", err)
	case <-time.After(waitLong):
		require.FailNow(t, "a's Sync never came")
	}
	go send("b")
	eventually(t, waitLong, func() bool { return r.FS.Writes() >= writes+2 }, "b is written while a's Sync is held")
	closed := make(chan error, 1)
	go func() { closed <- r.E.Close() }()
	ended, cancel := context.WithCancel(ctxBG)
	cancel() // refused before it is queued: ErrClosed once Close began, else the context's error
	eventually(t, waitLong, func() bool {
		_, err := r.E.Append(ended, &equeue.AppendRequest{Topic: "t", Messages: msgs("late")})
		return errors.Is(err, equeue.ErrClosed)
	}, "Close began")
	_, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("late")})
	require.ErrorIs(t, err, equeue.ErrClosed, "refused: not stored")
	close(release)
	for range 2 {
		err := <-outcomes
		require.ErrorIs(t, err, equeue.ErrIndeterminate, "written before or while the failed Sync ran")
	}
	<-closed // Close returns once the store answered (its result is the store's final Sync's)

	r.reopen()
	got := queueBodies(t, r.E, "t", 0)
	assert.NotContains(t, got, "late")
	assert.Subset(t, []string{"a", "b"}, got)
	res, err := r.E.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("c")})
	require.NoError(t, err)
	assert.Equal(t, int64(2), res.FirstOffset, "the unknown sends' offsets are not reused")
}
