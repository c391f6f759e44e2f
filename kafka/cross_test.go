package kafka_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/kafka"
)

// randomBodies returns n bodies of every byte value, some empty.
func randomBodies(n int) [][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([][]byte, n)
	for i := range out {
		b := make([]byte, r.IntN(300))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		out[i] = b
	}
	return out
}

// TestCross_KafkaToNative: records produced by franz-go reach a native
// consumer byte for byte, with key, tag and headers.
func TestCross_KafkaToNative(t *testing.T) {
	e, addr := setup(t, map[string]int{"x": 2})
	ctx := testCtx(t)
	bodies := randomBodies(50)
	p := kclient(t, addr, kgo.DefaultProduceTopic("x"))
	for i, b := range bodies {
		r := &kgo.Record{Key: []byte{byte(i), 0, 255}, Value: b, Headers: []kgo.RecordHeader{
			{Key: kafka.DefaultTagHeader, Value: []byte("TagA")}, {Key: "trace", Value: []byte{1, 2, 3}}}}
		require.NoError(t, p.ProduceSync(ctx, r).FirstErr())
	}
	var (
		mu  sync.Mutex
		got = map[string]*equeue.Message{}
		all = make(chan struct{})
	)
	c, err := equeue.NewConsumer(e, equeue.ConsumerOptions{Group: "native", Subscriptions: []equeue.Subscription{{Topic: "x", Filter: "TagA"}},
		Handler: func(_ context.Context, m *equeue.Message) error {
			mu.Lock()
			defer mu.Unlock()
			got[m.Keys[0]] = m
			if len(got) == len(bodies) {
				close(all)
			}
			return nil
		}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	defer func() { require.NoError(t, c.Close()) }()
	select {
	case <-all:
	case <-ctx.Done():
		t.Fatal("native consumer did not get every message")
	}
	mu.Lock()
	defer mu.Unlock()
	for i, b := range bodies {
		m := got[string([]byte{byte(i), 0, 255})]
		require.NotNil(t, m, "message %d", i)
		assert.True(t, bytes.Equal(b, m.Body), "body %d", i)
		assert.Equal(t, "TagA", m.Tag)
		assert.Equal(t, map[string]string{"trace": "\x01\x02\x03"}, m.Properties)
	}
}

// TestCross_NativeToKafka: messages a native producer sends are fetched by
// franz-go byte for byte, the tag in its header, properties as headers.
func TestCross_NativeToKafka(t *testing.T) {
	e, addr := setup(t, map[string]int{"y": 3})
	ctx := testCtx(t)
	bodies := randomBodies(60)
	p, err := equeue.NewProducer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, p.Close()) }()
	for i, b := range bodies {
		_, err := p.Send(ctx, &equeue.Message{Topic: "y", Keys: []string{string(rune('a' + i%26))}, Tag: "T", Body: b,
			Properties: map[string]string{"i": string(rune('0' + i%10))}})
		require.NoError(t, err)
	}
	c := kclient(t, addr, kgo.ConsumeTopics("y"))
	recs := pollN(ctx, t, c, len(bodies))
	seen := map[int]bool{}
	for _, r := range recs {
		i := -1
		for j, b := range bodies {
			if !seen[j] && bytes.Equal(b, r.Value) && string(r.Key) == string(rune('a'+j%26)) {
				i = j
				break
			}
		}
		require.GreaterOrEqual(t, i, 0, "record %s/%d/%d matches no message sent", r.Topic, r.Partition, r.Offset)
		seen[i] = true
		h := map[string]string{}
		for _, x := range r.Headers {
			h[x.Key] = string(x.Value)
		}
		assert.Equal(t, map[string]string{kafka.DefaultTagHeader: "T", "i": string(rune('0' + i%10))}, h)
	}
	assert.Len(t, seen, len(bodies))
}
