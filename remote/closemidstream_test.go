package remote_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// TestClient_CloseMidStreamOutcomesHold closes a client at a random
// moment while sends, batches and pipelined asynchronous sends run on it,
// some with contexts that end meanwhile. Every send ends, and whatever it
// was told (stored, not stored, unknown), the engine agrees: nothing the
// client answered not stored (ErrClosed among them) is sent later.
func TestClient_CloseMidStreamOutcomesHold(t *testing.T) {
	for round := range 20 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			ctx := ctxT(t)
			e := openEngine(t, nil)
			require.NoError(t, e.CreateTopic(ctx, "t", 2))
			s := startServer(t, e, "", nil)
			c, err := remote.Dial(s.addr, nil)
			require.NoError(t, err)
			p, err := equeue.NewProducer(c, nil)
			require.NoError(t, err)
			tl := newTold()
			var closed atomic.Bool
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Go(func() {
					for i := 0; ; i++ {
						sctx, cancel := context.WithTimeout(ctx, time.Duration(1+rand.IntN(3000))*time.Microsecond)
						var err error
						switch w {
						case 0:
							body := fmt.Sprintf("s-%d", i)
							_, err = p.Send(sctx, &equeue.Message{Topic: "t", Body: []byte(body)})
							tl.set(body, err)
						case 1:
							batch := []*equeue.Message{{Topic: "t", Body: fmt.Appendf(nil, "b-%d-0", i)}, {Topic: "t", Body: fmt.Appendf(nil, "b-%d-1", i)}}
							_, err = p.SendBatch(sctx, batch)
							for _, m := range batch {
								tl.set(string(m.Body), err)
							}
						default:
							var futs []*equeue.SendFuture
							for j := range 32 {
								futs = append(futs, p.SendAsync(sctx, &equeue.Message{Topic: "t", Body: fmt.Appendf(nil, "a-%d-%d", i, j)}))
							}
							for j, f := range futs {
								_, ferr := f.Result(context.Background())
								tl.set(fmt.Sprintf("a-%d-%d", i, j), ferr)
								if ferr != nil {
									err = ferr
								}
							}
						}
						cancel()
						if closed.Load() && err != nil {
							return // one more round after the Close, refused
						}
					}
				})
			}
			time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
			closed.Store(true)
			_ = c.Close()
			wg.Wait()
			_ = p.Close()
			tl.check(t, "close", e, "t")
		})
	}
}
