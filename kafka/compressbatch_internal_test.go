package kafka

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// compressBatch is raw, an uncompressed v2 record batch, with its records
// compressed with codec (snappy in the Java client's xerial framing) and
// its CRC recomputed, as a producer that compresses sends it.
func compressBatch(raw []byte, codec int) []byte {
	recs := raw[batchHeaderSize:]
	var b bytes.Buffer
	switch codec {
	case codecGzip:
		zw := gzip.NewWriter(&b)
		_, _ = zw.Write(recs)
		_ = zw.Close()
	case codecSnappy:
		block := snappy.Encode(nil, recs)
		b.Write(xerialMagic)
		b.Write([]byte{0, 0, 0, 1, 0, 0, 0, 1})
		b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(block))))
		b.Write(block)
	case codecLZ4:
		zw := lz4.NewWriter(&b)
		_, _ = zw.Write(recs)
		_ = zw.Close()
	case codecZstd:
		zw, _ := zstd.NewWriter(nil)
		b.Write(zw.EncodeAll(recs, nil))
		_ = zw.Close()
	default:
		b.Write(recs)
	}
	out := append(append([]byte(nil), raw[:batchHeaderSize]...), b.Bytes()...)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	attrs := binary.BigEndian.Uint16(out[21:])&^7 | uint16(codec)
	binary.BigEndian.PutUint16(out[21:], attrs)
	return fixCRC(out)
}

// withProducer is raw with producer ID pid, epoch epoch and first
// sequence number seq, its CRC recomputed.
func withProducer(raw []byte, pid int64, epoch int16, seq int32) []byte {
	out := append([]byte(nil), raw...)
	binary.BigEndian.PutUint64(out[43:], uint64(pid))
	binary.BigEndian.PutUint16(out[51:], uint16(epoch))
	binary.BigEndian.PutUint32(out[53:], uint32(seq))
	return fixCRC(out)
}

// fixCRC sets the CRC of the v2 record batch raw starts with to match
// what follows it, when raw is long enough to have one.
func fixCRC(raw []byte) []byte {
	if len(raw) >= 21 {
		binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], castagnoli))
	}
	return raw
}

// TestSeedProduceBatches_Decode: the fuzz seeds are whole batches the
// listener decodes, so the fuzzer starts past the CRC, in the
// decompressors and the sequence checks.
func TestSeedProduceBatches_Decode(t *testing.T) {
	for i, raw := range seedProduceBatches() {
		b, err := decodeBatch(raw, DefaultTagHeader, false)
		require.NoError(t, err, "seed %d", i)
		assert.Len(t, b.msgs, len(sampleMessages()), "seed %d", i)
	}
}
