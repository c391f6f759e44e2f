package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// TestCluster_FailedFirstBatchForgottenWhenRetentionPassedIt: the new
// term's read of a partition begins at its low watermark when retention
// removed records, so a failed first batch's failure is forgotten once
// retention removed any record stored since the try (the retry another
// leader stored may have been among them), however few records were
// stored since, not only past the read's 16,384 records: the producer's
// later batch is taken as it comes, as the README says.
func TestCluster_FailedFirstBatchForgottenWhenRetentionPassedIt(t *testing.T) {
	fs := faultstore.New(store.NewMemory())
	e := openEngine(t, &equeue.Options{Store: fs})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxMessages: 5}}))
	n1 := &fakeNode{Engine: e, id: "n1"}
	n1.setLeader("n1", "")
	c1 := kclient(t, serve(t, n1, nil))
	const pid = 4344

	fs.FailWrites(1)
	require.Equal(t, int16(56), produceRaw(ctx, t, c1, "t", 0, rawBatch(pid, 0, 0, "a", "b")).ErrorCode, "KAFKA_STORAGE_ERROR")
	n1.setLeader("n2", "")
	for range 4 {
		msgs := make([]*equeue.Message, 5)
		for i := range msgs {
			msgs[i] = &equeue.Message{Body: []byte("x")}
		}
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		ti, err := e.Topic(ctx, "t")
		require.NoError(t, err)
		return ti.Queues[0].MinOffset > 0
	}, 10*time.Second, 10*time.Millisecond, "retention removed records stored since the try")
	n1.setLeader("n1", "")

	next := produceRaw(ctx, t, c1, "t", 0, rawBatch(pid, 0, 2, "c"))
	assert.Equal(t, int16(0), next.ErrorCode, "the failure is forgotten: taken as it comes")
	assert.Equal(t, int64(20), next.BaseOffset)
}
