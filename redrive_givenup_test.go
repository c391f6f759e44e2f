package equeue_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRedrive_NextRedriveWaitsForAGivenUpOnesWrite: a redrive whose
// context ends while the engine writes its dead letter's copy and mark
// returns (the outcome unknown), and its write goes on. A second redrive
// of the same dead letter, started then, must wait for that write, see
// the mark and send nothing. Before, the first redrive let the next one
// run at once: it found no mark yet, and sent the dead letter a second
// time.
func TestRedrive_NextRedriveWaitsForAGivenUpOnesWrite(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			r := newFaultRig(t, kind, nil)
			require.NoError(t, r.E.CreateTopic(ctxBG, "t", 1))
			makeDeadLetters(t, r.E, &equeue.Message{Topic: "t", Body: []byte("dead")})
			var sends atomic.Int32
			second := make(chan struct{}) // the second redrive sends
			equeue.OnRedriveOne(r.E, func(string) {
				if sends.Add(1) == 2 {
					close(second)
				}
			})
			redrive := func(ctx context.Context) (int, error) {
				return r.E.Redrive(ctx, "g", equeue.RedriveRequest{Offsets: []int64{0}, ToTopic: true})
			}

			inWrite, release := holdWriteOf(t, r, "dead")
			ctx, cancel := context.WithCancel(ctxBG)
			first := make(chan error, 1)
			go func() {
				_, err := redrive(ctx)
				first <- err
			}()
			<-inWrite
			cancel()
			require.ErrorIs(t, <-first, equeue.ErrIndeterminate)

			type result struct {
				n   int
				err error
			}
			next := make(chan result, 1)
			go func() {
				n, err := redrive(ctxBG)
				next <- result{n, err}
			}()
			eventually(t, waitLong, func() bool {
				select {
				case <-second:
					return true // it sends while the first one's write is held
				default:
					return redriveWaitsItsTurn()
				}
			}, "the second redrive sends, or waits for its turn")
			release()
			res := <-next
			require.NoError(t, res.err)
			assert.Zero(t, res.n, "the given-up redrive's write marked the dead letter")
			assert.Equal(t, []string{"dead", "dead"}, queueBodies(t, r.E, "t", 0), "the dead letter went back once")
			assert.Equal(t, []bool{true}, redriven(t, r.E))
		})
	}
}

// redriveWaitsItsTurn reports whether a goroutine waits in Engine.Redrive
// itself (for the redrive before it), not in a send of its own.
func redriveWaitsItsTurn() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "[select") && strings.Contains(g, "equeue.(*Engine).Redrive(") &&
			!strings.Contains(g, "redriveOne") && !strings.Contains(g, "listDeadLetters") {
			return true
		}
	}
	return false
}
