package equeue_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/fdlimit"
	"github.com/equeue-go/equeue/store"
)

// An engine (SyncNever: under SyncAlways the store's Sync, which lists
// the directory, fails first and stops the engine's writes) whose Badger
// store fails to set a full memtable aside (no
// file descriptor left for the next one's log) answers that send "not
// stored", keeps the process up (pulls and sends fail with errors instead
// of a crash), and after a reopen holds every acknowledged message and
// none of the refused ones.
func TestHuntStore_EngineSurvivesAFailedMemtableRotation(t *testing.T) {
	dir := t.TempDir()
	open := func() *equeue.Engine {
		s, err := store.OpenBadger(dir, &store.BadgerOptions{MemTableSize: 1 << 20})
		require.NoError(t, err)
		e, err := equeue.Open("", &equeue.Options{Store: s, Sync: equeue.SyncNever})
		require.NoError(t, err)
		return e
	}
	e := open()
	require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
	body := make([]byte, 400)
	send := func(i int) error {
		ms := make([]*equeue.Message, 10)
		for j := range ms {
			ms[j] = &equeue.Message{Topic: "t", Body: fmt.Appendf(append([]byte(nil), body...), "%d-%d", i, j)}
		}
		_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: ms})
		return err
	}

	// Given back below; on a failure in between too, so that the tests
	// after this one get their descriptors back.
	restore := fdlimit.Save(t)
	acked := 0
	var failed error
	for i := 0; i < 10_000 && failed == nil; i++ {
		// No descriptor left to open, shut again before each send: one
		// that Badger's flushes and compactions closed meanwhile would
		// let the rotation through.
		fdlimit.Shut(t)
		if failed = send(i); failed == nil {
			acked++
		}
	}
	restore()
	require.Error(t, failed)
	assert.NotErrorIs(t, failed, equeue.ErrIndeterminate, "the failed write stored nothing")

	_, err := e.Pull(ctxBG, &equeue.PullRequest{Topic: "t", Max: 10})
	require.ErrorIs(t, err, store.ErrUnusable, "a pull fails, the process goes on")
	err = send(-1)
	require.ErrorIs(t, err, store.ErrUnusable)
	assert.NotErrorIs(t, err, equeue.ErrIndeterminate, "refused: not stored")
	_ = e.Close()

	e = open()
	defer func() { require.NoError(t, e.Close()) }()
	got := queueBodies(t, e, "t", 0)
	require.Len(t, got, acked*10, "every acknowledged message, none of the refused sends")
	require.NoError(t, send(-2), "sends go on after the reopen")
}
