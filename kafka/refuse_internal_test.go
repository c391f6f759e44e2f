package kafka

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every request a follower refuses, and every request that needs a right,
// has an answer of its kind: refusing never closes the connection.
func TestRefuse_AnswersEveryRefusedKind(t *testing.T) {
	keys := map[int16]bool{}
	for k := range servedByLeaderOnly {
		keys[k] = true
	}
	for k, v := range supported {
		if v.need != 0 {
			keys[k] = true
		}
	}
	c := &conn{}
	for k := range keys {
		req := kmsg.RequestForKey(k)
		require.NotNil(t, req, "key %d", k)
		for _, r := range []refusal{denial, notLeading} {
			resp, err := c.refuse(req, r)
			require.NoError(t, err, "%s", kmsg.NameForKey(k))
			assert.Equal(t, k, resp.Key(), "%s", kmsg.NameForKey(k))
		}
	}
}
