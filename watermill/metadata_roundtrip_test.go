package watermill_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	eqwm "github.com/equeue-go/equeue/watermill"
)

// TestMetadataRoundTrip: every metadata entry comes back as it was sent,
// on an in-process engine: an empty key, empty values, keys and values
// with spaces, newlines, NUL bytes, non-ASCII and non-UTF-8 bytes, keys
// that look like equeue's own or the UUID property's, a 100 kB value and
// 500 entries. (Over remote, protobuf refuses strings that are not UTF-8.)
func TestMetadataRoundTrip(t *testing.T) {
	e := openEngine(t)
	pub := newPublisher(t, eqwm.PublisherConfig{Broker: e, Queues: 1})
	sub := newSubscriber(t, eqwm.SubscriberConfig{Broker: e})
	md := message.Metadata{
		"":                 "the empty key",
		"empty":            "",
		"with space":       "a value with space",
		"uni-ключ-🔑":       "значение",
		"nul\x00key":       "nul\x00value",
		"new\nline":        "line\nbreak",
		"\xff\xfe":         "\xff",
		"equeue_custom":    "not a received key",
		"_watermill_other": "not the UUID property",
		"big":              strings.Repeat("b", 100_000),
	}
	for i := range 500 {
		md[fmt.Sprintf("k%03d", i)] = strings.Repeat("v", i)
	}
	sent := message.NewMessage("uuid-1", []byte("payload"))
	sent.Metadata = md
	require.NoError(t, pub.Publish("metadata", sent))
	ch, err := sub.Subscribe(ctxT(t), "metadata")
	require.NoError(t, err)
	got := receive(t, ch)
	got.Ack()

	assert.Equal(t, "uuid-1", got.UUID)
	assert.Equal(t, []byte("payload"), []byte(got.Payload))
	for k, v := range md {
		have, ok := got.Metadata[k]
		if assert.True(t, ok, "key %q missing", k) {
			assert.Equal(t, v, have, "key %q", k)
		}
	}
	assert.Len(t, got.Metadata, len(md)+5, "the sent entries and the five equeue_* keys")
}
