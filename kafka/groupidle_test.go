package kafka_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/equeue-go/equeue"
)

// TestGroupIdleTTL_KeepsKafkaGroupsWithMembers: Kafka clients commit only
// offsets that moved, so a group with live members on a quiet topic does
// not commit for a long while. The engine counted such a group's idle time
// from its last commit, and Options.GroupIdleTTL deleted its offsets under
// its members (a restart then replayed or skipped). The listener now keeps
// a group that has members in use (Engine.KeepGroup), as Kafka keeps the
// offsets of a group with members (KIP-211); once its members left, the
// group still expires after the TTL. Both protocols, classic and KIP-848
// (found by review).
func TestGroupIdleTTL_KeepsKafkaGroupsWithMembers(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []kgo.Opt
	}{
		{"classic", nil},
		{"kip848", []kgo.Opt{kgo.ServerSideBalancer()}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const ttl = 300 * time.Millisecond
			e := openEngine(t, &equeue.Options{GroupIdleTTL: ttl})
			ctx := testCtx(t)
			require.NoError(t, e.CreateTopic(ctx, "t", 1))
			_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{{Body: []byte("m0")}}})
			require.NoError(t, err)
			addr := serve(t, e, nil)
			opts := append([]kgo.Opt{kgo.ConsumerGroup("g"), kgo.ConsumeTopics("t"), kgo.DisableAutoCommit(),
				kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, tc.opts...)
			cl := kclient(t, addr, opts...)
			recs := pollN(ctx, t, cl, 1)
			require.NoError(t, cl.CommitRecords(ctx, recs[0]))
			ref := equeue.QueueRef{Topic: "t", Queue: 0}

			// Five TTLs without a commit, the member still in the group.
			for range 5 * int(ttl/(50*time.Millisecond)) {
				time.Sleep(50 * time.Millisecond)
				offs, err := e.GroupOffsets(ctx, "g")
				require.NoError(t, err)
				require.Equal(t, map[equeue.QueueRef]int64{ref: 1}, offs, "the offsets of a group with a live member went missing")
			}
			described, err := kadmin(t, addr).DescribeGroups(ctx, "g")
			require.NoError(t, err)
			require.Len(t, described["g"].Members, 1, "the member stayed all along")

			// Its member gone, the group expires.
			cl.Close()
			require.Eventually(t, func() bool {
				offs, err := e.GroupOffsets(ctx, "g")
				require.NoError(t, err)
				return len(offs) == 0
			}, 30*time.Second, 50*time.Millisecond, "a group whose members left expires")
		})
	}
}
