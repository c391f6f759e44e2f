package remote_test

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// The broker's store fails one write, or one fsync, while many sends are
// pipelined on one client (SendAsync on the append stream, and concurrent
// SendBatch calls): every send's answer holds against what the engine
// stored. One answered stored is stored; one answered with an error other
// than ErrIndeterminate is not; and the failure reached some sends.
func TestAppendStream_StoreFailureMidPipelineAnswersEachSendTruly(t *testing.T) {
	for _, failSync := range []bool{false, true} {
		for _, batches := range []bool{false, true} {
			name := fmt.Sprintf("%s/%s", map[bool]string{false: "write", true: "fsync"}[failSync],
				map[bool]string{false: "SendAsync", true: "SendBatch"}[batches])
			t.Run(name, func(t *testing.T) {
				ctx := ctxT(t)
				fs := faultstore.New(store.NewMemory())
				e := openEngine(t, &equeue.Options{Store: fs})
				require.NoError(t, e.CreateTopic(ctx, "t", 1))
				p := newProducer(t, dial(t, startServer(t, e, "", nil).addr, nil))
				// The write holding send 150, or the fsync after it, fails.
				var armed atomic.Bool
				fs.OnWrite(func(b *store.Batch) error {
					for _, en := range b.Entries {
						if bytes.HasSuffix(en.Value, pipelinedBody(150)) && armed.CompareAndSwap(false, true) && !failSync {
							return faultstore.ErrInjected
						}
					}
					return nil
				})
				var synced atomic.Bool
				fs.OnSync(func() error {
					if failSync && armed.Load() && synced.CompareAndSwap(false, true) {
						return faultstore.ErrInjected
					}
					return nil
				})

				const sends, per = 300, 10
				errs := make([]error, sends)
				if batches {
					var wg sync.WaitGroup
					for i := 0; i < sends; i += per {
						msgs := make([]*equeue.Message, per)
						for j := range msgs {
							msgs[j] = &equeue.Message{Topic: "t", Body: pipelinedBody(i + j)}
						}
						wg.Add(1)
						go func() {
							defer wg.Done()
							_, err := p.SendBatch(ctx, msgs)
							for j := range per {
								errs[i+j] = err
							}
						}()
					}
					wg.Wait()
				} else {
					futures := make([]*equeue.SendFuture, sends)
					for i := range futures {
						futures[i] = p.SendAsync(ctx, &equeue.Message{Topic: "t", Body: pipelinedBody(i)})
					}
					for i, f := range futures {
						_, errs[i] = f.Result(ctx)
					}
				}
				fs.OnWrite(nil)
				fs.OnSync(nil)

				stored := storedBodies(t, e, "t")
				failed := 0
				for i, err := range errs {
					switch {
					case err == nil:
						assert.True(t, stored[string(pipelinedBody(i))], "send %d answered stored but is not", i)
					case errors.Is(err, equeue.ErrIndeterminate):
						failed++
					default:
						failed++
						assert.False(t, stored[string(pipelinedBody(i))], "send %d answered not stored (%v) but is", i, err)
					}
				}
				assert.Positive(t, failed, "the injected failure reached no send")
			})
		}
	}
}

// pipelinedBody is the body of send i: no other send's body ends as it does.
func pipelinedBody(i int) []byte { return []byte(fmt.Sprintf("send-%d.", i)) }
