package remote

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/internal/allocs"
)

// A pull answer costs the client what it holds, not what its counts and
// lengths claim: a damaged or hostile answer allocates at most a few times
// its own size before it is refused.

const craftedAnswerSize = 1 << 20

// TestPullReply_AllocationBoundedByTheAnswer decodes answers that hold far
// fewer messages than they claim or frame: a stored batch that claims
// more messages than it holds, and messages of which the first is one
// protobuf refuses (an ID that is not UTF-8), followed by empty ones.
func TestPullReply_AllocationBoundedByTheAnswer(t *testing.T) {
	batch := []byte{equeue.StoredBatchVersion, 1, 't', 0}
	batch = binary.AppendUvarint(batch, (craftedAnswerSize-16)/15)
	batch = append(batch, make([]byte, craftedAnswerSize-len(batch))...)
	stored := protowire.AppendTag(nil, pullStored, protowire.BytesType)
	stored = protowire.AppendBytes(stored, batch)

	bad := protowire.AppendTag(nil, msgID, protowire.BytesType)
	bad = protowire.AppendBytes(bad, []byte{0xff})
	messages := protowire.AppendTag(nil, pullMessages, protowire.BytesType)
	messages = protowire.AppendBytes(messages, bad)
	for len(messages) < craftedAnswerSize {
		messages = protowire.AppendTag(messages, pullMessages, protowire.BytesType)
		messages = protowire.AppendBytes(messages, nil)
	}
	for name, b := range map[string][]byte{"stored batch": stored, "messages": messages} {
		for _, owned := range []bool{false, true} {
			var r pullReply
			var err error
			got := allocs.Fewest(func() {
				r = pullReply{}
				err = r.decode(b, owned)
			})
			if err == nil {
				err = r.err
			}
			require.Error(t, err, "%s, owned %v", name, owned)
			require.LessOrEqual(t, got, allocs.Bound(len(b)), "%s, owned %v: %d bytes allocated for an answer of %d", name, owned, got, len(b))
		}
	}
}
