package equeue_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
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

// resealRecord sets the checksum of b, a record of version 1 or 2 (codec.go,
// codec_v1.go), to that of its bytes, so that a fuzzed record reaches the
// decoding of its fields.
func resealRecord(b []byte) {
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	switch {
	case len(b) < 5:
	case b[0]&0x80 != 0:
		binary.BigEndian.PutUint32(b[1:5], crc32.Update(crc32.Checksum(b[:1], castagnoli), castagnoli, b[5:]))
	case b[0] == 1:
		binary.BigEndian.PutUint32(b[1:5], crc32.Checksum(b[5:], castagnoli))
	}
}

// FuzzPullOfAnyRecord puts any bytes, resealed, in the store in place of
// the record of a message between two others (seeded with real records: the
// message's own, a message's with every field, a version-1 one) and
// requires both read paths to serve the queue alike: Pull and PullStored
// neither fail nor panic, deliver the messages around it, and report the
// record as exactly one of a message, a corrupt record or an expired
// message, the same in both; and the stored batch decodes to the very
// messages Pull returned. A record of a format version the build does not
// know stops both before it: a pull from its offset fails with
// ErrUnsupportedFormat.
func FuzzPullOfAnyRecord(f *testing.F) {
	ctx := context.Background() // not ctxT's: a fuzzing run outlasts its deadline
	cs := &countingStore{Store: store.NewMemory()}
	e, err := equeue.Open("", &equeue.Options{Store: cs})
	require.NoError(f, err)
	f.Cleanup(func() { require.NoError(f, e.Close()) })
	require.NoError(f, e.CreateTopic(ctx, "t", 1))
	_, err = e.Append(ctx, &equeue.AppendRequest{Topic: "t", Messages: []*equeue.Message{
		{Body: []byte("before")},
		{ID: "mine", Tag: "A", Keys: []string{"k1", "k2"}, Properties: map[string]string{"p": "v"},
			BornAt: time.Unix(1_700_000_000, 5), TTL: 1000 * time.Hour, Attempt: 3, Body: []byte("every field")},
		{Body: []byte("after")},
	}})
	require.NoError(f, err)
	seen := func(_ store.QueueID, off uint64, v []byte) []byte {
		f.Add(bytes.Clone(v))
		return v
	}
	cs.corrupt.Store(&seen)
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(f, err)
	require.Len(f, res.Messages, 3)
	v1, err := os.ReadFile("testdata/record-v1.hex")
	require.NoError(f, err)
	v1, err = hex.DecodeString(strings.TrimSpace(string(v1)))
	require.NoError(f, err)
	f.Add(v1)

	f.Fuzz(func(t *testing.T, rec []byte) {
		resealRecord(rec)
		put := func(_ store.QueueID, off uint64, v []byte) []byte {
			if off == 1 {
				return bytes.Clone(rec)
			}
			return v
		}
		cs.corrupt.Store(&put)
		if len(rec) > 0 && rec[0] != 1 && rec[0] < 0x80 {
			requireStopsAtUnknownVersion(t, e)
			return
		}
		for _, filter := range []string{"", "A"} {
			req := &equeue.PullRequest{Topic: "t", Max: 10, Filter: filter}
			want, err := e.Pull(ctx, req)
			require.NoError(t, err)
			got, stored, err := e.PullStored(ctx, req)
			require.NoError(t, err)
			got.Messages = want.Messages
			require.Equal(t, want, got, "PullStored's status, offsets, corrupt and expired are Pull's")
			require.Equal(t, int64(3), want.NextOffset)
			var offsets []int64
			for _, m := range want.Messages {
				offsets = append(offsets, m.Offset)
			}
			one := len(want.Corrupt) + want.Expired
			if slices.Contains(offsets, 1) {
				one++
			}
			if filter == "" {
				require.Equal(t, "before", string(want.Messages[0].Body))
				require.Equal(t, "after", string(want.Messages[len(want.Messages)-1].Body))
				require.Equal(t, 1, one, "the record is one of a message, a corrupt record, an expired message: %+v", want)
			} else {
				require.LessOrEqual(t, one, 1, "the record is at most one of a message, a corrupt record, an expired message: %+v", want)
			}
			if len(want.Messages) == 0 {
				require.Zero(t, stored.Len())
				continue
			}
			_, n, ok := stored.BatchSize(1 << 30)
			require.True(t, ok)
			msgs, err := equeue.DecodeStoredBatch(stored.AppendBatch(nil, n))
			require.NoError(t, err)
			require.Equal(t, want.Messages, msgs, "the stored batch holds Pull's messages")
		}
	})
}

// requireStopsAtUnknownVersion requires Pull and PullStored of e's topic
// "t", whose record at offset 1 is of an unknown format version, to return
// offset 0 alone and stop at 1, and a pull from 1 to fail with
// ErrUnsupportedFormat.
func requireStopsAtUnknownVersion(t *testing.T, e *equeue.Engine) {
	t.Helper()
	ctx := context.Background()
	res, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Len(t, res.Messages, 1)
	require.Equal(t, "before", string(res.Messages[0].Body))
	require.Equal(t, int64(1), res.NextOffset)
	got, stored, err := e.PullStored(ctx, &equeue.PullRequest{Topic: "t", Max: 10})
	require.NoError(t, err)
	require.Equal(t, 1, stored.Len())
	got.Messages = res.Messages
	require.Equal(t, res, got, "PullStored's status, offsets, corrupt and expired are Pull's")
	_, err = e.Pull(ctx, &equeue.PullRequest{Topic: "t", Offset: 1, Max: 10})
	require.ErrorIs(t, err, equeue.ErrUnsupportedFormat)
	_, _, err = e.PullStored(ctx, &equeue.PullRequest{Topic: "t", Offset: 1, Max: 10})
	require.ErrorIs(t, err, equeue.ErrUnsupportedFormat)
}
