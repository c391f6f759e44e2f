package remote

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// A reply topic name passes as its token's only: not as another token's,
// not altered, and not in another form (qualified, cut, lengthened); the
// clients of one token, to one broker or to a cluster, name topics the
// same way.
func TestOwnsReplyTopic_OnlyTheNamingToken(t *testing.T) {
	a, b := replyKey("tok-a"), replyKey("tok-b")
	c, err := Dial("127.0.0.1:1", &ClientOptions{Token: "tok-a"})
	require.NoError(t, err)
	defer func() { _ = c.Close() }()
	cc, err := DialCluster([]string{"127.0.0.1:1"}, &ClientOptions{Token: "tok-a"})
	require.NoError(t, err)
	defer func() { _ = cc.Close() }()

	for _, name := range []string{newReplyTopicName(&a), c.NewReplyTopicName(), cc.NewReplyTopicName()} {
		require.True(t, equeue.IsReplyTopic(name), "%q", name)
		assert.True(t, ownsReplyTopic(&a, name), "%q", name)
		assert.False(t, ownsReplyTopic(&b, name), "%q as another token's", name)
		id := strings.TrimPrefix(name, equeue.ReplyTopicPrefix)
		flipped := []byte(id)
		flipped[0] ^= 1
		for _, other := range []string{
			equeue.ReplyTopicPrefix + string(flipped),
			equeue.ReplyTopicPrefix + "tenant:" + id,
			equeue.ReplyTopicPrefix + id[:len(id)-1],
			name + "0",
			id,
			equeue.ReplyTopicPrefix,
		} {
			assert.False(t, ownsReplyTopic(&a, other), "%q", other)
		}
	}
	assert.NotEqual(t, newReplyTopicName(&a), newReplyTopicName(&a), "each name is fresh")
}
