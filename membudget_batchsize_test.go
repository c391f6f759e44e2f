package equeue_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestMemoryBudget_LargestSendBatch holds the README's figures for the
// largest SendBatch of 100-byte messages (each with a short key) that one
// store write takes under a memory budget: smaller memtables make smaller
// writes. A batch of the stated size is stored, and one a tenth larger is
// refused with ErrBatchTooLarge before it is queued.
func TestMemoryBudget_LargestSendBatch(t *testing.T) {
	for _, c := range []struct {
		name   string
		budget int64
		fits   int // the README's figure
	}{
		{"floor", equeue.MinMemoryBudget, 790},
		{"48MiB", 48 << 20, 2370},
		{"default", 0, 6340},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, "badger", &equeue.Options{MemoryBudget: c.budget})
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			p := newProducer(t, e, nil)
			batch := func(n int) []*equeue.Message {
				msgs := make([]*equeue.Message, n)
				for i := range msgs {
					msgs[i] = &equeue.Message{Topic: "t", Keys: []string{"key-1"}, Body: fmt.Appendf(nil, "%0100d", i)}
				}
				return msgs
			}
			_, err := p.SendBatch(ctx, batch(c.fits))
			require.NoError(t, err, "a batch of %d", c.fits)
			over := c.fits + c.fits/10
			_, err = p.SendBatch(ctx, batch(over))
			require.ErrorIs(t, err, equeue.ErrBatchTooLarge, "a batch of %d", over)
		})
	}
}
