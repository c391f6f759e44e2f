package equeue_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDeleteGroup_WaitsForTheWriteOfAGivenUpSendBack: a SendBack whose
// context ends while the engine writes the message's copy and mark returns
// (the outcome unknown), and its write goes on; the gate that kept the
// group's deletion out (group.sbGate) is released as it returns. A
// DeleteGroup of the group started then must still delete that copy
// (in the retry topic, the delay log or the dead-letter topic) and mark:
// afterwards neither the group's retry or dead-letter topic, nor a
// delayed retry, nor any mark of it is left, and a group made again under
// the name starts clean.
func TestDeleteGroup_WaitsForTheWriteOfAGivenUpSendBack(t *testing.T) {
	cases := []struct {
		name  string
		dead  bool
		delay time.Duration
	}{{"retry", false, 0}, {"delayedRetry", false, time.Hour}, {"deadLetter", true, 0}}
	for _, kind := range storeKinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
				e := r.E
				require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
				_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("failed")})
				require.NoError(t, err)
				g, res := joinAndPull(t, e, "g", "m", "t")
				require.Len(t, res.Messages, 1)

				inWrite, release := holdWriteOf(t, r, "failed")
				ctx, cancel := context.WithCancel(ctxBG)
				sent := make(chan error, 1)
				go func() {
					_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Attempts: 1, Delay: tc.delay, DeadLetter: tc.dead})
					sent <- err
				}()
				<-inWrite
				cancel()
				require.ErrorIs(t, <-sent, equeue.ErrIndeterminate)

				deleteGivenUpsGroup(t, e, release)
				assertGroupGone(t, r)
			})
		}
	}
}

// TestDeleteGroup_WaitsForTheWriteOfAGivenUpRedrive is
// TestDeleteGroup_WaitsForTheWriteOfAGivenUpSendBack for a Redrive: its
// dead letter's copy (in the group's retry topic, or with ToTopic in its
// own topic) and redriven mark, written after the redrive gave up on its
// context, are deleted with the group, or never written.
func TestDeleteGroup_WaitsForTheWriteOfAGivenUpRedrive(t *testing.T) {
	for _, kind := range storeKinds {
		for _, toTopic := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/toTopic=%v", kind, toTopic), func(t *testing.T) {
				r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
				e := r.E
				require.NoError(t, e.CreateTopic(ctxBG, "t", 1))
				makeDeadLetters(t, e, &equeue.Message{Topic: "t", Body: []byte("dead")})

				// The dead letter's first write (to "t") is done: the next
				// one carrying its body is the redrive's.
				inWrite, release := holdWriteOf(t, r, "dead")
				ctx, cancel := context.WithCancel(ctxBG)
				redriven := make(chan error, 1)
				go func() {
					_, err := e.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0}, ToTopic: toTopic})
					redriven <- err
				}()
				<-inWrite
				cancel()
				require.ErrorIs(t, <-redriven, equeue.ErrIndeterminate)

				deleteGivenUpsGroup(t, e, release)
				assertGroupGone(t, r)
			})
		}
	}
}

// deleteGivenUpsGroup deletes group g while the write of a call that gave
// up on its context is held, and lets that write go once the deletion
// waits (for it, or for a write of its own behind it).
func deleteGivenUpsGroup(t *testing.T, e *equeue.Engine, release func()) {
	t.Helper()
	deleted := make(chan error, 1)
	go func() { deleted <- e.DeleteGroup(ctxBG, "g", equeue.DeleteGroupOptions{Force: true}) }()
	eventually(t, waitLong, func() bool {
		select {
		case err := <-deleted:
			deleted <- err
			return true
		default:
			return deleteGroupWaits()
		}
	}, "DeleteGroup waits, or is done")
	release()
	require.NoError(t, <-deleted)
}

// deleteGroupWaits reports whether a DeleteGroup waits for the writer.
func deleteGroupWaits() bool {
	return goroutineIn("equeue.(*Engine).deleteGroup(", "equeue.(*Engine).wait(")
}

// assertGroupGone checks that nothing of group g is left, once the writer
// is done with what was queued, and that a group made again under its
// name starts clean.
func assertGroupGone(t *testing.T, r *faultRig) {
	t.Helper()
	e := r.E
	// Writes complete in order: once this one is done, so is every one
	// queued before it.
	_, err := e.Append(ctxBG, &equeue.AppendRequest{Topic: "t", Messages: msgs("after")})
	require.NoError(t, err)
	for _, tp := range []string{equeue.RetryTopic("g"), equeue.DLQTopic("g")} {
		_, err = e.Topic(ctxBG, tp)
		assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "%s of the deleted group is not made again", tp)
	}
	assert.Empty(t, groupFootprint(t, r.FS, "g"), "nothing of the deleted group is stored")
	assert.Empty(t, redrivenKeys(t, r.FS, "g"), "no redriven mark of the deleted group")
	assert.Zero(t, metaKeys(t, r.FS, "sbk/g\x00"), "no send-back mark of the deleted group")

	// The group made again: no dead letters, nothing to retry.
	joinAndPull(t, e, "g", "m2", "t")
	dls, err := e.ListDeadLetters(ctxBG, "g", equeue.ListDeadLettersRequest{})
	require.NoError(t, err)
	assert.Empty(t, dls, "the group made again has no dead letters")
	// Its join may make its retry topic anew: an empty one.
	res, err := e.Pull(ctxBG, &equeue.PullRequest{Topic: equeue.RetryTopic("g")})
	if err == nil {
		assert.Empty(t, res.Messages, "the group made again has nothing to retry")
	} else {
		assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
	}
}
