package cluster_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
)

// TestNode_MaxMessageSizeIsTheEngines: a node tells the message size
// limit of its engine's options, the default without them, so a Kafka
// listener over it takes a CreateTopics max.message.bytes of at least
// that, as over a lone engine.
func TestNode_MaxMessageSizeIsTheEngines(t *testing.T) {
	for _, tc := range []struct {
		opts *equeue.Options
		want int
	}{
		{&equeue.Options{MaxMessageSize: 1 << 20}, 1 << 20},
		{nil, equeue.DefaultMaxMessageSize},
	} {
		c := newCluster(t, 1, func(o *cluster.Options) { o.Engine = tc.opts })
		s, ok := any(c.nodes[0]).(interface{ MaxMessageSize() int })
		require.True(t, ok, "a Node tells its message size limit")
		assert.Equal(t, tc.want, s.MaxMessageSize())
	}
}
