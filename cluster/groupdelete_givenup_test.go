package cluster_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/store"
)

// TestNode_DeleteGroupWaitsForTheWriteOfAGivenUpSendBack: on a node, a
// SendBack goes through the leader's engine, whose write of the copy and
// mark is a Raft entry. One whose context ends while that entry is being
// applied returns (the outcome unknown); a DeleteGroup of its group
// started then must still delete the copy and the mark once the entry is
// applied: no retry (or dead-letter) topic and no mark of the group is
// left after it.
func TestNode_DeleteGroupWaitsForTheWriteOfAGivenUpSendBack(t *testing.T) {
	for _, dead := range []bool{false, true} {
		t.Run(fmt.Sprintf("deadLetter=%v", dead), func(t *testing.T) {
			var hold atomic.Bool
			inApply, released := make(chan struct{}), make(chan struct{})
			var entered sync.Once
			release := sync.OnceFunc(func() { close(released) })
			c := newCluster(t, 1, func(o *cluster.Options) {
				cluster.SetFSMWriteHook(o, func(b *store.Batch) error {
					for _, e := range b.Entries {
						if hold.Load() && bytes.Contains(e.Value, []byte("failed")) {
							entered.Do(func() { close(inApply) })
							<-released
						}
					}
					return nil
				})
			})
			t.Cleanup(release) // before the cluster's close
			c.createTopic(t, "t", 1)
			n := c.waitLeader()
			ctx := context.Background()
			_, err := n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("failed")}}})
			require.NoError(t, err)
			a, err := n.JoinGroup(ctx, &equeue.JoinRequest{Group: "g", Member: "m",
				Subscriptions: []equeue.Subscription{{Topic: "t"}, {Topic: equeue.RetryTopic("g")}}})
			require.NoError(t, err)
			var grant equeue.Grant
			for _, q := range a.Queues {
				if q.Topic == "t" {
					grant = q
				}
			}
			require.Equal(t, "t", grant.Topic)
			res, err := n.Pull(ctx, &equeue.PullRequest{Topic: "t", Group: "g", Member: "m", Epoch: grant.Epoch})
			require.NoError(t, err)
			require.Len(t, res.Messages, 1)

			hold.Store(true)
			sbCtx, cancel := context.WithCancel(ctx)
			sent := make(chan error, 1)
			go func() {
				_, err := n.SendBack(sbCtx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: grant, Offset: 0, Attempts: 1, DeadLetter: dead})
				sent <- err
			}()
			select {
			case <-inApply:
			case <-time.After(time.Minute):
				t.Fatal("the send-back's write was not applied")
			}
			cancel()
			require.ErrorIs(t, <-sent, equeue.ErrIndeterminate)

			deleted := make(chan error, 1)
			go func() { deleted <- n.DeleteGroup(ctx, "g", equeue.DeleteGroupOptions{Force: true}) }()
			eventually(t, time.Minute, func() error {
				select {
				case err := <-deleted:
					deleted <- err
					return nil
				default:
				}
				if deleteGroupWaits() {
					return nil
				}
				return errors.New("DeleteGroup neither waits nor is done")
			})
			release()
			require.NoError(t, <-deleted)

			// Writes complete in order: once this one is done, so is
			// every one queued before it.
			_, err = n.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("after")}}})
			require.NoError(t, err)
			for _, tp := range []string{equeue.RetryTopic("g"), equeue.DLQTopic("g")} {
				_, err := n.Topic(ctx, tp)
				assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "%s of the deleted group is not made again", tp)
			}
			st := cluster.StoreOf(n)
			for _, p := range []string{"sbk/g\x00", "dlqr/g\x00", "off/g\x00", "grp/g"} {
				var keys []string
				require.NoError(t, st.ScanMeta([]byte(p), func(k, _ []byte) error {
					keys = append(keys, string(k))
					return nil
				}))
				assert.Empty(t, keys, "no %q key of the deleted group is left", p)
			}
		})
	}
}

// deleteGroupWaits reports whether a DeleteGroup waits for the engine's
// writer.
func deleteGroupWaits() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "equeue.(*Engine).deleteGroup(") && strings.Contains(g, "equeue.(*Engine).wait(") {
			return true
		}
	}
	return false
}
