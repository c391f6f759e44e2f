package equeue

import (
	"encoding/binary"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encodeRecordV1 is the version-1 encoder as engines before the compact
// format shipped it, kept to write the records the decoder must still read.
func encodeRecordV1(m *Message, id string, born time.Time) []byte {
	b := make([]byte, recordHeaderSize1, 256+len(m.Body))
	b[0] = recordVersion1
	putTime(b[13:], born)
	putTime(b[21:], m.DeliverAt)
	putTime(b[29:], m.ExpiresAt)
	b = binary.AppendUvarint(b, uint64(m.Attempt))
	b = appendString(b, id)
	b = appendString(b, m.Tag)
	b = binary.AppendUvarint(b, uint64(len(m.Keys)))
	for _, k := range m.Keys {
		b = appendString(b, k)
	}
	b = appendMap(b, m.Properties)
	b = appendMap(b, m.sys)
	b = binary.AppendUvarint(b, uint64(len(m.Body)))
	return append(b, m.Body...)
}

func sampleRecordV1() []byte {
	m := &Message{Tag: "t", Keys: []string{"a", "b"}, Properties: map[string]string{"x": "y"}, Body: []byte("hello"),
		ExpiresAt: time.Unix(100, 0), DeliverAt: time.Unix(50, 0), Attempt: 3, sys: map[string]string{"s": "v"}}
	rec := encodeRecordV1(m, "id-1", time.Unix(10, 5))
	sealRecord(rec, time.Unix(20, 7)) // a delayed version-1 record is resealed when moved
	return rec
}

func assertSample(t *testing.T, m *Message) {
	t.Helper()
	assert.Equal(t, "id-1", m.ID)
	assert.Equal(t, "t", m.Tag)
	assert.Equal(t, []string{"a", "b"}, m.Keys)
	assert.Equal(t, map[string]string{"x": "y"}, m.Properties)
	assert.Equal(t, map[string]string{"s": "v"}, m.sys)
	assert.Equal(t, []byte("hello"), m.Body)
	assert.Equal(t, 3, m.Attempt)
	assert.True(t, m.BornAt.Equal(time.Unix(10, 5)), "born-at %v", m.BornAt)
	assert.True(t, m.StoredAt.Equal(time.Unix(20, 7)), "stored-at %v", m.StoredAt)
	assert.True(t, m.DeliverAt.Equal(time.Unix(50, 0)), "deliver-at %v", m.DeliverAt)
	assert.True(t, m.ExpiresAt.Equal(time.Unix(100, 0)), "expires-at %v", m.ExpiresAt)
}

// TestCodec_ReadsVersion1 decodes records in the format engines wrote
// before the compact one, and reseals them (as a delay move does).
func TestCodec_ReadsVersion1(t *testing.T) {
	m, err := decodeRecord(sampleRecordV1())
	require.NoError(t, err)
	assertSample(t, m)

	bodyOnly := encodeRecordV1(&Message{Body: []byte("b")}, "0123456789abcdef0123456789abcdef", time.Unix(1, 0))
	sealRecord(bodyOnly, time.Unix(2, 0))
	m, err = decodeRecord(bodyOnly)
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef0123456789abcdef", m.ID)
	assert.Equal(t, []byte("b"), m.Body)
	assert.Nil(t, m.Keys)
	assert.True(t, m.StoredAt.Equal(time.Unix(2, 0)))
}

// TestCodec_ReadsGoldenVersion1 decodes a record written by the engine
// before the compact format (testdata/record-v1.hex, made by the encoder of
// that release), so the reader is held to real old bytes, not only to the
// copy of the old encoder above.
func TestCodec_ReadsGoldenVersion1(t *testing.T) {
	raw, err := os.ReadFile("testdata/record-v1.hex")
	require.NoError(t, err)
	rec, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	require.Equal(t, byte(1), rec[0], "a version-1 record")
	m, err := decodeRecord(rec)
	require.NoError(t, err)
	assertSample(t, m)
	assert.Equal(t, sampleRecordV1(), rec, "the kept version-1 encoder writes what the old engine wrote")
}
