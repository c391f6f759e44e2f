package equeue

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/allocs"
)

// The decoders of stored batches and records allocate for what they find
// in their input, never for what its counts and lengths claim: a damaged
// or hostile batch (a remote pull's answer, a record read back) costs at
// most a few times its own size, however large the numbers in it.

// craftedSize is the size of the crafted inputs: large enough that a
// decoder allocating for their claims shows far above allocBound.
const craftedSize = 1 << 20

// sealV2 sets the checksum of a version-2 record.
func sealV2(b []byte) []byte {
	binary.BigEndian.PutUint32(b[1:5], recordChecksum(b))
	return b
}

// sealV1 sets the checksum of a version-1 record.
func sealV1(b []byte) []byte {
	binary.BigEndian.PutUint32(b[1:5], crc32.Checksum(b[5:], castagnoli))
	return b
}

// v2Claiming is a sealed version-2 record of craftedSize bytes whose second
// flags are flags2 and whose first field after them claims every byte
// left: a count of keys or of map entries, followed by no valid item.
func v2Claiming(flags2 byte) []byte {
	b := make([]byte, recordFixedSize+storedDeltaLen, craftedSize)
	b[0] = recordV2Mark | flagStoredDelta | flagMore
	binary.BigEndian.PutUint64(b[5:], uint64(time.Unix(1_700_000_000, 0).UnixNano()))
	b = append(b, flags2)
	rest := craftedSize - len(b) - 3
	b = binary.AppendUvarint(b, uint64(rest))
	// Each item's length says more than is left: the first fails.
	for len(b) < craftedSize {
		b = append(b, 0xff)
	}
	return sealV2(b)
}

// v1KeysClaiming is a sealed version-1 record of craftedSize bytes whose
// count of keys claims every byte left.
func v1KeysClaiming() []byte {
	b := make([]byte, recordHeaderSize1, craftedSize)
	b[0] = recordVersion1
	b = append(b, 0, 0, 0) // attempt, ID, tag
	rest := craftedSize - len(b) - 3
	b = binary.AppendUvarint(b, uint64(rest))
	for len(b) < craftedSize {
		b = append(b, 0xff)
	}
	return sealV1(b)
}

// batchHead is the start of a stored batch of queue 0 of "t" that claims
// count messages.
func batchHead(count int) []byte {
	b := []byte{StoredBatchVersion, 1, 't', 0}
	return binary.AppendUvarint(b, uint64(count))
}

// batchOf is a stored batch of the given records at offsets 0, 1, ...,
// that claims count messages.
func batchOf(count int, recs ...[]byte) []byte {
	b := batchHead(count)
	for _, rec := range recs {
		b = binary.AppendUvarint(b, 0)
		b = binary.AppendUvarint(b, uint64(len(rec)))
		b = append(b, rec...)
	}
	return b
}

// padded is b with zero bytes up to craftedSize.
func padded(b []byte) []byte {
	return append(b, make([]byte, max(craftedSize-len(b), 0))...)
}

// mostClaimed is the largest count of messages a batch of craftedSize
// bytes may claim before the decoder refuses the count itself.
const mostClaimed = (craftedSize - 16) / (recordFixedSize + 2)

func validRecord(t testing.TB) []byte {
	t.Helper()
	rec := encodeRecord(&Message{Body: []byte("x")}, "", time.Unix(1_700_000_000, 0))
	sealRecord(rec, time.Unix(1_700_000_000, 1))
	_, err := decodeRecord(rec)
	require.NoError(t, err)
	return rec
}

// TestDecode_AllocationBoundedByTheInput decodes batches and records whose
// counts and lengths claim far more than they hold: each is refused as
// corrupt, having allocated at most allocBound of its size.
func TestDecode_AllocationBoundedByTheInput(t *testing.T) {
	rec := validRecord(t)
	badSum := bytes.Clone(rec)
	badSum[1] ^= 0xff
	var badSums [][]byte
	for range craftedSize / (len(badSum) + 2) {
		badSums = append(badSums, badSum)
	}
	batches := map[string][]byte{
		"a count and no messages":                    padded(batchHead(mostClaimed)),
		"a count and empty records":                  padded(batchOf(mostClaimed, nil)),
		"a count and records failing their checksum": batchOf(mostClaimed, badSums...),
		"a count and one message":                    padded(batchOf(mostClaimed, rec)),
		"a count and many messages, then damage":     padded(batchOf(mostClaimed, rec, rec, rec, rec, rec, rec, rec, rec, rec, rec, nil)),
		"a record claiming keys":                     batchOf(1, v2Claiming(flag2Keys)),
		"a record claiming properties":               batchOf(1, v2Claiming(flag2Properties)),
		"a record claiming system properties":        batchOf(1, v2Claiming(flag2Sys)),
		"a version-1 record claiming keys":           batchOf(1, v1KeysClaiming()),
		"a topic claiming every byte":                padded(binary.AppendUvarint([]byte{StoredBatchVersion}, craftedSize)),
	}
	for name, b := range batches {
		t.Run("batch/"+name, func(t *testing.T) {
			var err error
			got := allocs.Fewest(func() { _, err = DecodeStoredBatch(b) })
			require.ErrorIs(t, err, ErrCorrupt)
			require.LessOrEqual(t, got, allocs.Bound(len(b)), "%d bytes allocated for a batch of %d", got, len(b))
		})
	}
	records := map[string][]byte{
		"keys":              v2Claiming(flag2Keys),
		"properties":        v2Claiming(flag2Properties),
		"system properties": v2Claiming(flag2Sys),
		"version 1, keys":   v1KeysClaiming(),
	}
	for name, b := range records {
		t.Run("record/"+name, func(t *testing.T) {
			var err error
			got := allocs.Fewest(func() { _, err = decodeRecord(b) })
			require.ErrorIs(t, err, ErrCorrupt)
			require.LessOrEqual(t, got, allocs.Bound(len(b)), "%d bytes allocated for a record of %d", got, len(b))
		})
	}
}

// FuzzDecode_ClaimsCostTheInput builds batches that claim count messages
// and hold valid of them (at most 32), then a record whose count of keys
// claims keys, followed by size bytes that hold no key (or, with no keys,
// the body): whatever the numbers, decoding one allocates at most
// allocBound of its size.
func FuzzDecode_ClaimsCostTheInput(f *testing.F) {
	f.Add(uint32(mostClaimed), uint8(0), uint32(0), uint32(craftedSize))
	f.Add(uint32(mostClaimed), uint8(3), uint32(craftedSize/2), uint32(craftedSize))
	f.Add(uint32(1<<31), uint8(3), uint32(1<<20), uint32(craftedSize))
	f.Add(uint32(1000), uint8(32), uint32(1<<30), uint32(1<<16))
	f.Add(uint32(2), uint8(1), uint32(5), uint32(0))
	rec := validRecord(f)
	f.Fuzz(func(t *testing.T, count uint32, valid uint8, keys uint32, size uint32) {
		recs := make([][]byte, 0, 33)
		for range min(valid, 32) {
			recs = append(recs, rec)
		}
		claiming := make([]byte, recordFixedSize+storedDeltaLen, 64)
		claiming[0] = recordV2Mark | flagStoredDelta | flagMore
		claiming = binary.AppendUvarint(append(claiming, flag2Keys), uint64(keys))
		claiming = append(claiming, bytes.Repeat([]byte{0xff}, int(min(size, craftedSize)))...)
		recs = append(recs, sealV2(claiming))
		b := batchOf(int(count), recs...)
		var err error
		got := allocs.Fewest(func() { _, err = DecodeStoredBatch(b) })
		if err != nil { // a count of 0 keys, or of as many messages as held, is valid
			require.ErrorIs(t, err, ErrCorrupt)
		}
		require.LessOrEqual(t, got, allocs.Bound(len(b)), "%d bytes allocated for a batch of %d", got, len(b))
	})
}
