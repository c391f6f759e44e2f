package kafka_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// pullCounting is an engine that counts the messages its Pull returns.
type pullCounting struct {
	*equeue.Engine
	read atomic.Int64
}

func (b *pullCounting) Pull(ctx context.Context, req *equeue.PullRequest) (equeue.PullResult, error) {
	res, err := b.Engine.Pull(ctx, req)
	b.read.Add(int64(len(res.Messages)))
	return res, err
}

// TestProduce_UnknownProducersReadThePartitionOnce: producers the listener
// keeps no state of, each sending a first batch (a client making producer
// IDs up), of sequence 0 or another, have the partition's last records
// read back once, not once each: before, every such batch read the
// partition's last 16,384 records, so a client could make each of its
// produces cost that read.
func TestProduce_UnknownProducersReadThePartitionOnce(t *testing.T) {
	e := openEngine(t, nil)
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	const stored = 3000
	for i := 0; i < stored; i += 500 {
		var msgs []*equeue.Message
		for j := range 500 {
			msgs = append(msgs, &equeue.Message{Body: fmt.Appendf(nil, "n%d", i+j)})
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	b := &pullCounting{Engine: e}
	cl := kclient(t, serve(t, b, nil))
	const producers = 10
	for pid := range int64(producers) {
		got := produceRaw(ctx, t, cl, "t", 0, rawBatch(9000+pid, 0, int32(pid%2)*5, "x"))
		require.Equal(t, int16(0), got.ErrorCode, "a producer none of the records is of is taken as it comes")
	}
	assert.LessOrEqual(t, b.read.Load(), int64(stored), "the partition's records are read once for all the producers")
	assert.Equal(t, int64(stored+producers), storedCount(t, e, "t"))
}
