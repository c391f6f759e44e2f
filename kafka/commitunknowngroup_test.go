package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestGroups_CommitWithAGenerationToAGroupNotHeldIsUnknownMemberID: an
// OffsetCommit (v2–v8, all the listener serves) with a generation and a
// member ID to a group the listener holds no members of (none of that
// name, or one it forgot: after a restart, a change of cluster leader or
// a minute without members) gets UNKNOWN_MEMBER_ID and stores nothing.
// Kafka answers ILLEGAL_GENERATION only when no group of that name exists
// at all, and UNKNOWN_MEMBER_ID to a group it keeps (as Empty, with its
// offsets) whose member it does not know, the case a forgotten group is
// in. The listener gives every such commit UNKNOWN_MEMBER_ID: franz-go,
// sarama and segmentio/kafka-go handle both codes alike, and the Java
// consumer, which keeps its member ID after ILLEGAL_GENERATION, would
// only rejoin under an ID the listener does not know and be told
// UNKNOWN_MEMBER_ID then; with it at once, it rejoins anew one round
// trip sooner. Once the member joined again, its commits are taken.
func TestGroups_CommitWithAGenerationToAGroupNotHeldIsUnknownMemberID(t *testing.T) {
	_, addr := setup(t, map[string]int{"t": 1})
	ctx := testCtx(t)
	br := kclient(t, addr).SeedBrokers()[0]
	assert.Equal(t, kerr.UnknownMemberID.Code, classicCommit(ctx, t, br, "gone-1", "", 3))
	offs, err := kadmin(t, addr).FetchOffsets(ctx, "g")
	require.NoError(t, err)
	assert.Empty(t, offs, "nothing stored")

	j := joinAlone(ctx, t, br, "g")
	assert.Equal(t, int16(0), classicCommit(ctx, t, br, j.MemberID, "", j.Generation))
}
