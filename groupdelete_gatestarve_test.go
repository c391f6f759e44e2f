package equeue_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestNameGate_CancelledDeletionsHoldNoSendBackBehindThem: deletions of
// a group or of its retry topic wait for the SendBacks holding the
// group's name gate, and one whose context ends gives up. A deletion that
// gave up must not hold the SendBacks and joins that come after it: they
// share the gate with the SendBack under way and go on. Before, each
// deletion that gave up left its wait for the gate behind it, which held
// every later SendBack and join of the group until all the gate's holders
// were done: a stream of deletions with short contexts starved them.
func TestNameGate_CancelledDeletionsHoldNoSendBackBehindThem(t *testing.T) {
	const backs, deletions = 10, 20
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			r := newFaultRig(t, kind, &equeue.Options{Retention: equeue.RetentionPolicy{Interval: -1}})
			e := r.E
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			bodies := make([]string, backs+1)
			for i := range bodies {
				bodies[i] = "m"
			}
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs(bodies...)})
			require.NoError(t, err)
			g, res := joinAndPull(t, e, "g", "m", "t")
			require.Len(t, res.Messages, backs+1)

			// The first SendBack holds the gate (shared) until the end.
			held, release := make(chan struct{}), make(chan struct{})
			var first1 atomic.Bool
			var releaseOnce sync.Once
			letGo := func() { releaseOnce.Do(func() { close(release) }) }
			t.Cleanup(letGo)
			equeue.OnSendBackHeld(e, func(string) {
				if first1.CompareAndSwap(false, true) { // the first only: the others go on
					close(held)
					<-release
				}
			})
			t.Cleanup(func() { equeue.OnSendBackHeld(e, nil) })
			first := make(chan error, 1)
			go func() {
				_, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: 0, Attempts: 1})
				first <- err
			}()
			<-held

			// deleteOnce runs one deletion whose context ends (once it waits
			// for the gate, with wait) and returns its error.
			deleteOnce := func(i int, wait bool) error {
				dctx, cancel := context.WithCancel(ctx)
				defer cancel()
				done := make(chan error, 1)
				base := equeue.NameGateRefs(e, "g")
				go func() {
					if i%2 == 0 {
						done <- e.DeleteGroup(dctx, "g", equeue.DeleteGroupOptions{})
					} else {
						done <- e.DeleteTopic(dctx, equeue.RetryTopic("g"))
					}
				}()
				if wait {
					eventually(t, waitLong, func() bool { return equeue.NameGateRefs(e, "g") > base || len(done) > 0 },
						"the deletion waits for the gate")
				}
				cancel()
				return <-done
			}
			for i := range deletions {
				require.ErrorIs(t, deleteOnce(i, true), context.Canceled, "deletion %d gave up on its context", i)
			}

			// More deletions keep coming and giving up while the SendBacks
			// go on (the SendBacks change the gate's count: these do not
			// wait for it to show the deletion's wait).
			stop := make(chan struct{})
			var stopOnce sync.Once
			var wg sync.WaitGroup
			halt := func() {
				stopOnce.Do(func() { close(stop) })
				wg.Wait()
			}
			t.Cleanup(halt)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := deleteOnce(i, false); !assert.ErrorIs(t, err, context.Canceled, "deletion %d gave up on its context", i) {
						return
					}
				}
			}()
			var sent atomic.Int64
			backsDone := make(chan error, 1)
			go func() {
				for off := int64(1); off <= backs; off++ {
					if _, err := e.SendBack(ctx, &equeue.SendBackRequest{Group: "g", Member: "m", Grant: g, Offset: off, Attempts: 1}); err != nil {
						backsDone <- err
						return
					}
					sent.Add(1)
				}
				backsDone <- nil
			}()
			eventually(t, waitLong, func() bool { return sent.Load() == backs },
				"the SendBacks share the gate with the one under way, past the deletions that gave up")
			halt()
			letGo()
			require.NoError(t, <-first)
			require.NoError(t, <-backsDone)
			eventually(t, waitLong, func() bool { return equeue.NameGateRefs(e, "g") == 0 }, "the gate is given back")
			_, err = e.Topic(ctx, equeue.RetryTopic("g"))
			assert.NoError(t, err, "no deletion went through")
		})
	}
}
