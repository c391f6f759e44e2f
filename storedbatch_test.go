package equeue_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// storedBatchMessages sends messages with every field a record keeps to
// topic t (2 queues): engine and producer IDs, tags, keys, properties, sys
// properties, a TTL, an empty and a large body; one in five expires at
// once.
func storedBatchMessages(t *testing.T, e *equeue.Engine) {
	t.Helper()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 2))
	var msgs []*equeue.Message
	for i := range 40 {
		m := &equeue.Message{Topic: "t", Tag: []string{"A", "B", ""}[i%3], Body: fmt.Appendf(nil, "body %d", i),
			BornAt: time.Unix(1_700_000_000, int64(i))}
		switch i % 8 {
		case 1:
			m.ID = fmt.Sprintf("producer-%d", i)
		case 2:
			m.Keys = []string{"k1", "", "k2"}
			m.Properties = map[string]string{"a": "1", "": "empty key"}
		case 3:
			m.Body = nil
		case 4:
			m.Body = bytes.Repeat([]byte{byte(i)}, 70_000)
		case 5:
			m.SetSysProperties(map[string]string{equeue.SysReplyTo: "%REPLY%elsewhere", "x": "y"})
		case 6:
			m.TTL = time.Hour
		}
		if i%5 == 0 {
			m.TTL = time.Millisecond
		}
		msgs = append(msgs, m)
	}
	for q := range 2 {
		_, err := e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: q, Messages: msgs})
		require.NoError(t, err)
	}
	time.Sleep(5 * time.Millisecond) // the short TTLs run out
}

// A stored batch decodes to the very messages the pull returned: every
// field, on Badger and in memory, for pulls that skip messages (by tag, by
// TTL) between those they return.
func TestStoredBatch_SameMessagesAsPull(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind, func(t *testing.T) {
			ctx := ctxT(t)
			e, _ := openEngine(t, kind, nil)
			storedBatchMessages(t, e)
			sawSys, sawProducerID, sawEmpty := false, false, false
			for q := range 2 {
				for _, filter := range []string{"*", "A || B"} {
					for off := int64(0); off < 40; {
						req := &equeue.PullRequest{Topic: "t", Queue: q, Offset: off, Max: 9, Filter: filter}
						want, err := e.Pull(ctx, req)
						require.NoError(t, err)
						got, stored, err := e.PullStored(ctx, req)
						require.NoError(t, err)
						assert.Empty(t, got.Messages, "the messages are in the stored records")
						got.Messages = want.Messages
						require.Equal(t, want, got, "PullStored's status, offsets, corrupt and expired are Pull's")
						require.Equal(t, len(want.Messages), stored.Len())
						for i, m := range want.Messages {
							require.Equal(t, m.Offset, stored.Offset(i))
						}
						size, n, ok := stored.BatchSize(1 << 30)
						if len(want.Messages) == 0 {
							assert.False(t, ok, "no messages, no batch")
						} else {
							assert.Equal(t, equeue.QueueRef{Topic: "t", Queue: q}, stored.QueueRef())
							require.True(t, ok)
							require.Equal(t, len(want.Messages), n)
							b := stored.AppendBatch([]byte("prefix"), n)
							require.Len(t, b, len("prefix")+size, "BatchSize is the batch's length")
							msgs, err := equeue.DecodeStoredBatch(b[len("prefix"):])
							require.NoError(t, err)
							require.Equal(t, want.Messages, msgs)
							for _, m := range msgs {
								sawSys = sawSys || m.SysProperty(equeue.SysReplyTo) == "%REPLY%elsewhere"
								sawProducerID = sawProducerID || strings.HasPrefix(m.ID, "producer-")
								sawEmpty = sawEmpty || m.Body == nil
							}
						}
						require.Greater(t, got.NextOffset, off)
						off = got.NextOffset
					}
				}
			}
			assert.True(t, sawSys && sawProducerID && sawEmpty, "the batches carried sys properties, producer IDs and empty bodies")
		})
	}
}

// BatchSize takes the first messages that fit in the limit, and none when
// the first does not; the batch of n messages decodes to the first n.
func TestStoredBatch_TrimsToLimit(t *testing.T) {
	ctx := ctxT(t)
	e, _ := openEngine(t, "memory", nil)
	require.NoError(t, e.CreateTopic(ctx, "t", 1))
	p := newProducer(t, e, nil)
	for i := range 10 {
		_, err := p.Send(ctx, &equeue.Message{Topic: "t", Body: bytes.Repeat([]byte{'x'}, 100*(i+1))})
		require.NoError(t, err)
	}
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 10)
	_, stored, err := e.PullStored(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	whole, n, ok := stored.BatchSize(1 << 20)
	require.True(t, ok)
	require.Equal(t, 10, n)
	prevN := -1
	for limit := 0; limit <= whole; limit += 37 {
		size, n, ok := stored.BatchSize(limit)
		require.True(t, ok)
		if n > 0 {
			assert.LessOrEqual(t, size, limit, "limit %d", limit)
		}
		assert.GreaterOrEqual(t, n, prevN, "a larger limit never takes fewer")
		prevN = n
		msgs, err := equeue.DecodeStoredBatch(stored.AppendBatch(nil, n))
		require.NoError(t, err)
		require.Len(t, msgs, n)
		for i, m := range msgs {
			assert.Equal(t, res.Messages[i].Body, m.Body)
			assert.Equal(t, res.Messages[i].Offset, m.Offset)
		}
	}
	_, n, _ = stored.BatchSize(whole)
	assert.Equal(t, 10, n, "the whole batch fits its own size")
	_, n, _ = stored.BatchSize(whole - 1)
	assert.Equal(t, 9, n)
	_, n, ok = stored.BatchSize(50)
	assert.True(t, ok)
	assert.Equal(t, 0, n, "a first message over the limit: none")

	// No records: a nil or empty StoredRecords, and a pull without messages.
	var none *equeue.StoredRecords
	_, _, ok = none.BatchSize(1 << 20)
	assert.False(t, ok)
	_, _, ok = new(equeue.StoredRecords).BatchSize(1 << 20)
	assert.False(t, ok)
	res, stored, err = e.PullStored(ctx, &equeue.PullRequest{Topic: "t", Offset: 10})
	assert.Equal(t, 0, stored.Len())
	require.NoError(t, err)
	assert.Equal(t, equeue.PullNoNewMessage, res.Status)
	_, _, ok = stored.BatchSize(1 << 20)
	assert.False(t, ok)
	_, stored, err = e.PullStored(ctx, &equeue.PullRequest{Topic: "no-such-topic"})
	require.ErrorIs(t, err, equeue.ErrTopicNotFound)
	assert.Nil(t, stored)
}

// storedBatchSeed is a valid batch of three messages of queue 3 of "t".
func storedBatchSeed(t testing.TB) []byte {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	ctx := ctxT(t)
	require.NoError(t, e.CreateTopic(ctx, "t", 4))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Queue: 3, Messages: []*equeue.Message{
		{Topic: "t", Tag: "A", Body: []byte("one")}, {Topic: "t", ID: "mine", Body: []byte("two")}, {Topic: "t"}}})
	require.NoError(t, err)
	_, stored, err := e.PullStored(ctx, &equeue.PullRequest{Topic: "t", Queue: 3})
	require.NoError(t, err)
	_, n, ok := stored.BatchSize(1 << 20)
	require.True(t, ok)
	return stored.AppendBatch(nil, n)
}

// A damaged batch is an error matching ErrCorrupt, never a panic or a
// wrong message: every truncation, every flipped byte, a newer version
// (also ErrUnsupportedFormat), trailing bytes and an absurd count.
func TestStoredBatch_RefusesMalformed(t *testing.T) {
	good := storedBatchSeed(t)
	msgs, err := equeue.DecodeStoredBatch(bytes.Clone(good))
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	assert.Equal(t, "t", msgs[2].Topic)
	assert.Equal(t, 3, msgs[2].Queue)
	assert.Equal(t, int64(2), msgs[2].Offset)
	assert.Equal(t, "mine", msgs[1].ID)

	for n := range len(good) {
		_, err := equeue.DecodeStoredBatch(bytes.Clone(good[:n]))
		require.ErrorIs(t, err, equeue.ErrCorrupt, "cut at %d", n)
	}
	for i := range good {
		b := bytes.Clone(good)
		b[i] ^= 0x01
		got, err := equeue.DecodeStoredBatch(b)
		if err != nil {
			require.ErrorIs(t, err, equeue.ErrCorrupt, "byte %d flipped", i)
			continue
		}
		// Only the framing's own numbers can change unnoticed: the topic's
		// letters, the queue and the offsets; never a record's content.
		require.Len(t, got, 3, "byte %d flipped", i)
		for j, m := range got {
			assert.Equal(t, msgs[j].Body, m.Body, "byte %d flipped", i)
			assert.Equal(t, msgs[j].ID, m.ID, "byte %d flipped", i)
		}
	}
	newer := bytes.Clone(good)
	newer[0] = equeue.StoredBatchVersion + 1
	_, err = equeue.DecodeStoredBatch(newer)
	require.ErrorIs(t, err, equeue.ErrUnsupportedFormat)
	require.ErrorIs(t, err, equeue.ErrCorrupt)
	_, err = equeue.DecodeStoredBatch(append(bytes.Clone(good), 0))
	require.ErrorIs(t, err, equeue.ErrCorrupt, "trailing bytes")
	_, err = equeue.DecodeStoredBatch([]byte{1, 1, 't', 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	require.ErrorIs(t, err, equeue.ErrCorrupt, "a count beyond the bytes")
	_, err = equeue.DecodeStoredBatch(nil)
	require.ErrorIs(t, err, equeue.ErrCorrupt)
	if msgs, err := equeue.DecodeStoredBatch([]byte{1, 1, 't', 0, 0}); assert.NoError(t, err) {
		assert.Empty(t, msgs, "an empty batch is valid")
	}
}

// storedBatchRecords returns the records of a stored batch made by
// AppendBatch (its offsets ignored).
func storedBatchRecords(t *testing.T, b []byte) [][]byte {
	t.Helper()
	p := 1 + 1 + int(b[1]) // version, topic
	_, k := binary.Uvarint(b[p:])
	p += k // queue
	n, k := binary.Uvarint(b[p:])
	p += k
	var recs [][]byte
	for range n {
		_, k = binary.Uvarint(b[p:])
		p += k // the offset's gap
		l, k := binary.Uvarint(b[p:])
		p += k
		recs = append(recs, b[p:p+int(l)])
		p += int(l)
	}
	require.Equal(t, len(b), p)
	return recs
}

// A batch whose first message is at the largest offset cannot hold a
// message after it: its offset would wrap around to a negative one, out of
// order. Such a batch is refused as corrupt, as any other malformed one.
func TestStoredBatch_RefusesAnOffsetPastTheLargest(t *testing.T) {
	recs := storedBatchRecords(t, storedBatchSeed(t))
	b := []byte{equeue.StoredBatchVersion, 1, 't', 3, 2}
	for i, gap := range []uint64{math.MaxInt64, 0} {
		b = binary.AppendUvarint(b, gap)
		b = binary.AppendUvarint(b, uint64(len(recs[i])))
		b = append(b, recs[i]...)
	}
	msgs, err := equeue.DecodeStoredBatch(b)
	offsets := make([]int64, 0, len(msgs))
	for _, m := range msgs {
		offsets = append(offsets, m.Offset)
	}
	require.ErrorIs(t, err, equeue.ErrCorrupt, "decoded offsets %v", offsets)

	// The largest offset alone is a batch like any other.
	one := []byte{equeue.StoredBatchVersion, 1, 't', 3, 1}
	one = binary.AppendUvarint(one, math.MaxInt64)
	one = binary.AppendUvarint(one, uint64(len(recs[0])))
	msgs, err = equeue.DecodeStoredBatch(append(one, recs[0]...))
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, int64(math.MaxInt64), msgs[0].Offset)
}

func FuzzDecodeStoredBatch(f *testing.F) {
	good := storedBatchSeed(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte{1, 1, 't', 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		msgs, err := equeue.DecodeStoredBatch(b)
		if err != nil {
			if !errors.Is(err, equeue.ErrCorrupt) {
				t.Fatalf("error %v does not match ErrCorrupt", err)
			}
			return
		}
		prev := int64(-1)
		for _, m := range msgs {
			if m == nil || m.Offset <= prev {
				t.Fatalf("messages out of order: %v", msgs)
			}
			prev = m.Offset
		}
	})
}
