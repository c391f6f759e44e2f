package kafka_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestDescribeConfigs_DocumentationWhenAsked: DescribeConfigs v3+ asked
// to include documentation gives each config the listener reports a
// short description of it, as Kafka gives its configs' docs; not asked,
// it gives none (null). Before, the flag was ignored: never any.
func TestDescribeConfigs_DocumentationWhenAsked(t *testing.T) {
	e := openEngine(t, &equeue.Options{MaxMessageSize: 64 << 10})
	ctx := testCtx(t)
	require.NoError(t, e.CreateTopicWith(ctx, "t", equeue.TopicOptions{Queues: 1, Limits: equeue.TopicLimits{MaxBytes: 1 << 20, RetentionAge: -1}}))
	addr := serve(t, e, nil)

	for _, rr := range describeAll(t, addr, "t", true).Resources {
		for _, c := range rr.Configs {
			if assert.NotNil(t, c.Documentation, "%s %s: documented", rr.ResourceName, c.Name) {
				assert.NotEmpty(t, *c.Documentation, "%s %s", rr.ResourceName, c.Name)
			}
		}
	}
	for _, rr := range describeAll(t, addr, "t", false).Resources {
		for _, c := range rr.Configs {
			assert.Nil(t, c.Documentation, "%s %s: not asked, none", rr.ResourceName, c.Name)
		}
	}
}
