package kafka

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"hash/crc32"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/equeue-go/equeue"
)

// sampleMessages are three messages at consecutive offsets, so the batch
// the fetch writer makes of them is one a producer could send too (a
// produced batch's offset range must match its record count).
func sampleMessages() []*equeue.Message {
	at := time.UnixMilli(1_700_000_000_123)
	return []*equeue.Message{
		{Offset: 10, Keys: []string{"k"}, Body: []byte("v"), Tag: "T", Properties: map[string]string{"a": "1"}, BornAt: at, StoredAt: at},
		{Offset: 11, Body: []byte{}, BornAt: at.Add(time.Second), StoredAt: at.Add(time.Second)},
		{Offset: 12, Keys: []string{""}, Body: bytes.Repeat([]byte{0xff}, 300), BornAt: at, StoredAt: at},
	}
}

// TestBatchWriter_DecodesBack: what a fetch writes decodes, CRC and all, to
// the same keys, values, headers, tag and timestamps.
func TestBatchWriter_DecodesBack(t *testing.T) {
	var w batchWriter
	w.begin(nil, 10)
	for _, m := range sampleMessages() {
		w.add(m, DefaultTagHeader, false)
	}
	raw := w.finish(false)
	b, err := decodeBatch(raw, DefaultTagHeader, false)
	require.NoError(t, err)
	got := b.msgs
	require.Len(t, got, 3)
	for i, m := range sampleMessages() {
		assert.Equal(t, m.Keys, got[i].Keys, i)
		assert.Equal(t, string(m.Body), string(got[i].Body), i)
		assert.Equal(t, m.Tag, got[i].Tag, i)
		assert.Equal(t, len(m.Properties), len(got[i].Properties), i)
		assert.True(t, m.BornAt.Equal(got[i].BornAt), i)
	}
	raw[len(raw)-1] ^= 1
	_, err = decodeBatch(raw, DefaultTagHeader, false)
	assert.ErrorIs(t, err, errBadBatch, "a flipped byte fails the CRC")
}

// TestDecodeBatches_RecordCountIsBounded: a batch whose header claims far
// more records than it holds is refused without the decoder setting memory
// aside for the claim (a compressed batch can inflate to 100 MiB: a
// pointer per claimed record would be hundreds of MiB): what is set aside
// follows the records read.
func TestDecodeBatches_RecordCountIsBounded(t *testing.T) {
	const body = 8 << 20
	for _, claim := range []uint32{body, body / 7} { // 7: the smallest record
		var w batchWriter
		w.begin(nil, 0)
		w.add(&equeue.Message{Body: make([]byte, body)}, DefaultTagHeader, false)
		raw := w.finish(false)
		binary.BigEndian.PutUint32(raw[57:], claim)   // records claimed
		binary.BigEndian.PutUint32(raw[23:], claim-1) // and their offset range
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := decodeBatch(raw, DefaultTagHeader, false)
		runtime.ReadMemStats(&after)
		require.ErrorIs(t, err, errInvalidBatch, "%d records claimed", claim)
		assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(4<<20), "bytes allocated decoding a batch claiming %d records", claim)
	}
}

// TestDecompress_Bounds: corrupt compressed data is an error, not a panic;
// an unknown codec is an error of its own.
func TestDecompress_Bounds(t *testing.T) {
	for codec := range 8 {
		_, err := decompress(codec, []byte("not compressed at all"))
		switch {
		case codec == codecNone:
			assert.NoError(t, err)
		case codec > codecZstd:
			assert.ErrorIs(t, err, errUnknownCodec, "codec %d", codec)
			assert.NotErrorIs(t, err, errCodec, "codec %d", codec)
		default:
			assert.ErrorIs(t, err, errCodec, "codec %d", codec)
		}
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte("ok"))
	require.NoError(t, zw.Close())
	out, err := decompress(codecGzip, b.Bytes())
	require.NoError(t, err)
	assert.Equal(t, "ok", string(out))
}

// FuzzDecodeBatch: no input makes the produce decoder panic.
func FuzzDecodeBatch(f *testing.F) {
	var w batchWriter
	w.begin(nil, sampleMessages()[0].Offset)
	for _, m := range sampleMessages() {
		w.add(m, DefaultTagHeader, false)
	}
	f.Add(w.finish(false))
	f.Add([]byte{})
	for _, b := range seedProduceBatches() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = decodeBatch(raw, DefaultTagHeader, false)
	})
}

// FuzzRequestHeader: no request frame makes header parsing panic.
func FuzzRequestHeader(f *testing.F) {
	f.Add([]byte{0, 18, 0, 3, 0, 0, 0, 1, 0, 1, 'x', 0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, body, err := parseHeader(raw)
		if err == nil {
			_, _ = skipHeaderTags(body)
		}
	})
}

// TestProducers_ExpireIdle: sequence state idle longer than the limit is
// forgotten; recent state is kept.
func TestProducers_ExpireIdle(t *testing.T) {
	p := newProducers()
	b := &producedBatch{producerID: 7, firstSeq: 0, msgs: make([]*equeue.Message, 2)}
	st := p.lock(0, 7, "t", 0)
	st.stored(b, storedAt{})
	st.mu.Unlock()
	p.expire(time.Now(), time.Hour)
	require.Len(t, p.parts, 1)
	st = p.lock(0, 7, "t", 0)
	_, dup, code := st.check(b)
	st.mu.Unlock()
	assert.True(t, dup)
	assert.Equal(t, errNone, code)
	p.expire(time.Now().Add(2*time.Hour), time.Hour)
	assert.Empty(t, p.parts)
}

// BenchmarkBatchWriter: encoding pulled messages for a fetch answer costs
// no allocation per message once the connection's buffers have grown.
func BenchmarkBatchWriter(b *testing.B) {
	msgs := make([]*equeue.Message, 1024)
	at := time.Now()
	for i := range msgs {
		msgs[i] = &equeue.Message{Offset: int64(i), Keys: []string{"key"}, Body: make([]byte, 100), Tag: "T",
			Properties: map[string]string{"a": "b"}, BornAt: at, StoredAt: at}
	}
	var w batchWriter
	var buf []byte
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w.begin(buf[:0], 0)
		for _, m := range msgs {
			w.add(m, DefaultTagHeader, false)
		}
		buf = w.finish(false)
	}
	b.ReportMetric(float64(b.N*len(msgs))/b.Elapsed().Seconds(), "msgs/s")
}

// legacyMessageSet is a message set of one message of format v1 (magic 1,
// Produce v2 and older), as clients older than Kafka 0.11 send.
func legacyMessageSet(value string) []byte {
	msg := []byte{1, 0}                                                 // magic, attributes
	msg = binary.BigEndian.AppendUint64(msg, uint64(1_700_000_000_000)) // timestamp
	msg = binary.BigEndian.AppendUint32(msg, ^uint32(0))                // null key
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(value)))
	msg = append(msg, value...)
	set := binary.BigEndian.AppendUint64(nil, 0) // offset
	set = binary.BigEndian.AppendUint32(set, uint32(4+len(msg)))
	set = binary.BigEndian.AppendUint32(set, crc32.ChecksumIEEE(msg))
	return append(set, msg...)
}

// TestDecodeBatches_LegacyMessageSetIsUnsupported: a message set of the old
// formats is refused as an unsupported format (UNSUPPORTED_FOR_MESSAGE_FORMAT,
// which clients do not retry), whatever the length of its message; not as a
// corrupt batch (CORRUPT_MESSAGE, which they retry until they time out).
func TestDecodeBatches_LegacyMessageSetIsUnsupported(t *testing.T) {
	e, err := equeue.Open("", &equeue.Options{InMemory: true})
	require.NoError(t, err)
	defer func() { require.NoError(t, e.Close()) }()
	require.NoError(t, e.CreateTopic(context.Background(), "t", 1))
	s, err := NewServer(e, nil)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	c := newConn(s, discardConn{})
	defer c.cancel()
	for _, value := range []string{"", "hi", string(bytes.Repeat([]byte{'v'}, 100))} {
		_, err := decodeBatch(legacyMessageSet(value), DefaultTagHeader, false)
		assert.ErrorIs(t, err, errUnsupportedFormat, "a value of %d bytes", len(value))
		var rp kmsg.ProduceResponseTopicPartition
		c.producePartition(c.ctx, 9, "t", 0, legacyMessageSet(value), &rp)
		assert.Equal(t, errUnsupportedForMessageFmt, rp.ErrorCode, "a value of %d bytes", len(value))
	}
}
