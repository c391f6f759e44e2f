package kafka_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/equeue-go/equeue"
)

// TestAdmin_CreateTopicTakesMaxMessageBytesTheEngineHonours: tools set
// max.message.bytes on every topic they make, and a create with it was
// refused whatever its value. A value at least the engine's message size
// limit (equeue.Options.MaxMessageSize) is honoured, since the engine
// refuses anything larger anyway: the topic is made. A smaller one, which
// the engine would not enforce, or one that is no size, is refused
// INVALID_CONFIG with a message naming the key, validate_only too, and
// makes nothing.
func TestAdmin_CreateTopicTakesMaxMessageBytesTheEngineHonours(t *testing.T) {
	const limit = 1 << 20
	e := openEngine(t, &equeue.Options{MaxMessageSize: limit})
	ctx := testCtx(t)
	adm := kadmin(t, serve(t, e, nil))
	for i, v := range []int{limit, 10 * limit} {
		name := "big" + strconv.Itoa(i)
		val := strconv.Itoa(v)
		cfg := map[string]*string{"max.message.bytes": &val}
		vr, err := adm.ValidateCreateTopics(ctx, 1, 1, cfg, name)
		require.NoError(t, err)
		assert.NoError(t, vr[name].Err, "validate only, %s", val)
		r, err := adm.CreateTopic(ctx, 1, 1, cfg, name)
		require.NoError(t, err)
		require.NoError(t, r.Err, val)
		_, err = e.Topic(ctx, name)
		assert.NoError(t, err, "%s made the topic", val)
	}
	for _, val := range []string{strconv.Itoa(limit - 1), "1024", "-1", "lots", "99999999999"} {
		cfg := map[string]*string{"max.message.bytes": &val}
		vr, err := adm.ValidateCreateTopics(ctx, 1, 1, cfg, "small")
		require.NoError(t, err)
		assert.ErrorIs(t, vr["small"].Err, kerr.InvalidConfig, "validate only, %s", val)
		r, err := adm.CreateTopic(ctx, 1, 1, cfg, "small")
		assert.ErrorIs(t, err, kerr.InvalidConfig, val)
		assert.ErrorIs(t, r.Err, kerr.InvalidConfig, val)
		assert.Contains(t, r.ErrMessage, "max.message.bytes", val)
		_, err = e.Topic(ctx, "small")
		assert.ErrorIs(t, err, equeue.ErrTopicNotFound, "%s made nothing", val)
	}
}
