package equeue_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// goroutineIn reports whether the stack of some goroutine holds every
// one of frames.
func goroutineIn(frames ...string) bool {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	for _, g := range strings.Split(string(buf), "\n\n") {
		all := true
		for _, f := range frames {
			all = all && strings.Contains(g, f)
		}
		if all {
			return true
		}
	}
	return false
}

// TestDeleteGroup_BroadcastCommitWaitingForItStoresNothing commits a
// broadcasting member's offset back (which first fences the group's
// send-backs) while a forced DeleteGroup holds them fenced: the commit
// waits for the deletion, and must then find its member gone (a
// broadcasting grant names no owner for the deletion to take away). An
// offset it stored would bring the deleted group back at the next open.
func TestDeleteGroup_BroadcastCommitWaitingForItStoresNothing(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := f.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			require.NoError(t, e.CreateTopic(ctx, "block", 1))
			p := newProducer(t, e, nil)
			for range 5 {
				_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("x")})
				require.NoError(t, err)
			}
			a, err := e.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m", Model: equeue.Broadcasting, Subscriptions: []equeue.Subscription{{Topic: "t"}}})
			require.NoError(t, err)
			require.Len(t, a.Queues, 1)
			grant := a.Queues[0]
			require.NoError(t, e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: grant, Offset: 4}}}))

			// Hold the writer in a send's store write, so that DeleteGroup
			// waits in its barrier with the group's send-backs fenced.
			release := make(chan struct{})
			var armed atomic.Bool
			armed.Store(true)
			f.FS.OnWrite(func(b *store.Batch) error {
				if len(b.Entries) > 0 && armed.CompareAndSwap(true, false) {
					<-release
				}
				return nil
			})
			sent := make(chan error, 1)
			go func() {
				_, err := p.Send(ctx, &equeue.Message{Topic: "block", Body: []byte("x")})
				sent <- err
			}()
			eventually(t, 10*time.Second, func() bool { return goroutineIn("faultstore.(*FS).Write(") }, "the writer holds the send")
			deleted := make(chan error, 1)
			go func() { deleted <- e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}) }()
			eventually(t, 10*time.Second, func() bool {
				return goroutineIn("equeue.(*Engine).deleteGroupKeys(", "equeue.(*Engine).barrier(")
			}, "DeleteGroup waits for the writer with the send-backs fenced")
			committed := make(chan error, 1)
			go func() {
				committed <- e.CommitOffsets(ctx, &equeue.CommitRequest{Group: "g", Member: "m", Offsets: []equeue.OffsetCommit{{Grant: grant, Offset: 1}}})
			}()
			eventually(t, 10*time.Second, func() bool {
				return goroutineIn("equeue.(*Engine).CommitOffsets(", "equeue.(*Engine).fenceSendBacks(")
			}, "the commit waits for the deletion")
			close(release)
			require.NoError(t, <-sent)
			require.NoError(t, <-deleted)
			assert.ErrorIs(t, <-committed, equeue.ErrNotMember, "the commit came after its member went with the group")
			assert.Empty(t, offsetKeys(t, f.FS, "g"), "no offset of the deleted group is stored")
			_, err = f.reopen().Group(ctx, "g")
			assert.ErrorIs(t, err, equeue.ErrGroupNotFound, "the deleted group stays deleted after a reopen")
		})
	}
}

// TestDeleteGroup_CutShortKeepsDeadLettersRedrivenOnce cuts a DeleteGroup
// short after the group's keys went and before its dead-letter topic did
// (that deletion's write fails, as a crash would leave it): the dead
// letters left are still marked redriven, in process and after a reopen,
// and a redrive of them all sends none again.
func TestDeleteGroup_CutShortKeepsDeadLettersRedrivenOnce(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			f := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := f.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			p := newProducer(t, e, nil)
			_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: []byte("dead")})
			require.NoError(t, err)
			c := startConsumer(t, e, equeue.ConsumerOptions{Group: "g", Subscriptions: []equeue.Subscription{{Topic: "t"}},
				Handler: func(context.Context, *equeue.Message) error { return equeue.DeadLetter(errors.New("never")) }})
			eventually(t, 30*time.Second, func() bool {
				dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				return err == nil && len(dl) == 1
			}, "dead letter stored")
			require.NoError(t, c.Close())
			n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
			require.NoError(t, err)
			require.Equal(t, 1, n)

			failWritesOf(f.FS, "topic/"+equeue.DLQTopic("g"))
			require.ErrorIs(t, e.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}), faultstore.ErrInjected)
			f.FS.OnWrite(nil)
			check := func(e *equeue.Engine, when string) {
				t.Helper()
				dl, err := e.ListDeadLetters(ctx, "g", equeue.ListDeadLettersRequest{})
				require.NoError(t, err, when)
				require.Len(t, dl, 1, when)
				assert.True(t, dl[0].Redriven, "%s: the dead letter is still marked redriven", when)
				_, err = e.Redrive(ctx, "g", equeue.RedriveRequest{All: true})
				assert.ErrorIs(t, err, equeue.ErrInvalidArgument, "%s: the group's retry topic is no longer known to be consumed", when)
				assert.ErrorIs(t, err, equeue.ErrGroupNotFound, when)
				n, err := e.Redrive(ctx, "g", equeue.RedriveRequest{All: true, ToTopic: true})
				require.NoError(t, err, when)
				assert.Equal(t, 0, n, "%s: a dead letter redriven once is not redriven again", when)
			}
			check(e, "in process")
			check(f.reopen(), "after a reopen")
			require.NoError(t, f.E.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{}), "deleting it again finishes it")
			_, err = f.E.Topic(ctx, equeue.DLQTopic("g"))
			assert.ErrorIs(t, err, equeue.ErrTopicNotFound)
			assert.Empty(t, redrivenKeys(t, f.FS, "g"), "no redriven mark of the group is left")
		})
	}
}

// redrivenKeys lists the stored redriven marks of group g.
func redrivenKeys(t *testing.T, fs *faultstore.FS, g string) []string {
	var out []string
	for k := range metaDump(t, fs) {
		if strings.HasPrefix(k, "dlqr/"+g+"\x00") {
			out = append(out, k)
		}
	}
	return out
}
