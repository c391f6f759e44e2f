package kafka_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/faultstore"
	"github.com/equeue-go/equeue/store"
)

// bodiesOf is the bodies of the first max messages of partition 0 of topic.
func bodiesOf(t *testing.T, e *equeue.Engine, topic string, max int) []string {
	t.Helper()
	res, err := e.Pull(testCtx(t), &equeue.PullRequest{Topic: topic, Max: max})
	require.NoError(t, err)
	var bodies []string
	for _, m := range res.Messages {
		bodies = append(bodies, string(m.Body))
	}
	return bodies
}

// TestCluster_FailedFirstBatchIsNotOvertakenAcrossTerms: an idempotent
// producer's first batch to a partition fails; its node stops leading and
// leads again (a new term) before the batch the producer pipelined after it
// arrives. That batch must still be refused OUT_OF_ORDER_SEQUENCE_NUMBER,
// not stored ahead of the failed one: no leader stored any of the
// producer's records in between (the partition read at the new term finds
// none). Before, the term change forgot the failed batch with the rest of
// the producer's state, and the later batch was taken as a first one.
// When another leader stored the failed batch's retry in between, the
// read finds it and the later batch is stored after it; when more records
// were stored since than the read covers, the failure is forgotten and the
// later batch taken as it comes, as before.
func TestCluster_FailedFirstBatchIsNotOvertakenAcrossTerms(t *testing.T) {
	for _, tc := range []struct{ elsewhere, beyondRead bool }{{false, false}, {true, false}, {true, true}} {
		elsewhere := tc.elsewhere
		t.Run(fmt.Sprintf("retry stored at another leader: %v, more records than a read since: %v", tc.elsewhere, tc.beyondRead), func(t *testing.T) {
			fs := faultstore.New(store.NewMemory())
			e := openEngine(t, &equeue.Options{Store: fs})
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			n1, n2 := &fakeNode{Engine: e, id: "n1"}, &fakeNode{Engine: e, id: "n2"}
			lead := func(id string) {
				n1.setLeader(id, "")
				n2.setLeader(id, "")
			}
			lead("n1")
			c1, c2 := kclient(t, serve(t, n1, nil)), kclient(t, serve(t, n2, nil))
			const pid = 4343

			fs.FailWrites(1)
			require.Equal(t, int16(56), produceRaw(ctx, t, c1, "t", 0, rawBatch(pid, 0, 0, "a", "b")).ErrorCode, "KAFKA_STORAGE_ERROR")
			lead("n2")
			if elsewhere {
				require.Equal(t, int16(0), produceRaw(ctx, t, c2, "t", 0, rawBatch(pid, 0, 0, "a", "b")).ErrorCode)
			}
			filler := 0
			if tc.beyondRead {
				filler = 17 * equeue.MaxPullBatch // more than the listener's read of a partition
				for range 17 {
					msgs := make([]*equeue.Message, equeue.MaxPullBatch)
					for i := range msgs {
						msgs[i] = &equeue.Message{Body: []byte("x")}
					}
					_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: msgs})
					require.NoError(t, err)
				}
			}
			lead("n1")

			ahead := produceRaw(ctx, t, c1, "t", 0, rawBatch(pid, 0, 2, "c"))
			if elsewhere {
				require.Equal(t, int16(0), ahead.ErrorCode, "in sequence after the batch the other leader stored")
				assert.Equal(t, int64(2+filler), ahead.BaseOffset)
			} else {
				assert.Equal(t, int16(45), ahead.ErrorCode, "OUT_OF_ORDER_SEQUENCE_NUMBER: the failed batch comes first")
				assert.Equal(t, int64(-1), ahead.BaseOffset)
				require.Equal(t, int16(0), produceRaw(ctx, t, c1, "t", 0, rawBatch(pid, 0, 0, "a", "b")).ErrorCode)
				next := produceRaw(ctx, t, c1, "t", 0, rawBatch(pid, 0, 2, "c"))
				require.Equal(t, int16(0), next.ErrorCode)
				assert.Equal(t, int64(2), next.BaseOffset)
			}
			if filler == 0 {
				assert.Equal(t, []string{"a", "b", "c"}, bodiesOf(t, e, "t", 10), "in the producer's order, each once")
			}
		})
	}
}
