package equeue

import (
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestIDFormatter_SameMessagesAsOneByOne decodes one read's records with
// the deferred ID formatting the read path uses and one by one, and
// requires the same messages: engine-shaped IDs whose counter is born-at
// and whose counter is not, a producer's own ID, no ID, and a corrupt
// record among them.
func TestIDFormatter_SameMessagesAsOneByOne(t *testing.T) {
	born := time.Unix(1_700_000_000, 123_456_789)
	engineShaped := func(prefix string, counter int64) string {
		raw := [engineIDLen / 2]byte{}
		copy(raw[:], prefix)
		for i := range 8 {
			raw[engineIDPrefixLen+i] = byte(uint64(counter) >> (56 - 8*i))
		}
		return hex.EncodeToString(raw[:])
	}
	ids := []string{
		engineShaped("abcd", born.UnixNano()),   // counter = born-at
		engineShaped("abcd", born.UnixNano()+7), // counter off born-at
		engineShaped("\x00\x01\x02\x03", 1),     // far from born-at
		"order-42",                              // the producer's own
		"",                                      // none
		engineShaped("wxyz", born.UnixNano()-999), // before born-at
	}
	var recs [][]byte
	for i, id := range ids {
		m := &Message{Topic: "t", Tag: "tag", Body: []byte{byte(i), 1, 2}}
		rec := encodeRecord(m, id, born)
		sealRecord(rec, born.Add(time.Millisecond))
		recs = append(recs, rec)
		if i == 2 { // a corrupt record between two good ones
			bad := append([]byte(nil), rec...)
			bad[len(bad)-1] ^= 0xff
			recs = append(recs, bad)
		}
	}
	slab := make([]Message, len(recs))
	f := idFormatter{pending: make([]pendingID, 0, len(recs))}
	corrupt := 0
	for i, r := range recs {
		if err := decodeRecordTo(&slab[i], r, &f); err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			corrupt++
		}
	}
	f.flush()
	require.Equal(t, 1, corrupt)
	require.Empty(t, f.pending, "flush empties the formatter for the next read")

	got := 0
	for i, r := range recs {
		want, err := decodeRecord(r)
		if err != nil {
			continue
		}
		require.Equal(t, *want, slab[i], "record %d", i)
		got++
	}
	require.Equal(t, len(ids), got)
	// The IDs as written: the engine-shaped ones come back in hex.
	for i, id := range ids {
		j := i
		if i > 2 {
			j++ // after the corrupt record
		}
		require.Equal(t, id, slab[j].ID, "record %d", j)
	}
}

// TestIDFormatter_OneAllocationPerRead counts what the deferred IDs cost:
// a read of 32 engine-shaped records allocates for its IDs once, where
// formatting them one by one allocated 32 times.
func TestIDFormatter_OneAllocationPerRead(t *testing.T) {
	born := time.Unix(1_700_000_000, 0)
	recs := make([][]byte, 32)
	for i := range recs {
		at := born.Add(time.Duration(i))
		id := hex.EncodeToString([]byte("abcd")) + fmt.Sprintf("%016x", at.UnixNano())
		rec := encodeRecord(&Message{Body: []byte("x")}, id, at)
		sealRecord(rec, born)
		recs[i] = rec
	}
	slab := make([]Message, len(recs))
	f := idFormatter{pending: make([]pendingID, 0, len(recs))}
	deferred := testing.AllocsPerRun(50, func() {
		for i, r := range recs {
			slab[i] = Message{}
			_ = decodeRecordTo(&slab[i], r, &f)
		}
		f.flush()
	})
	oneByOne := testing.AllocsPerRun(50, func() {
		for i, r := range recs {
			slab[i] = Message{}
			_ = decodeRecordTo(&slab[i], r, nil)
		}
	})
	require.Equal(t, 1.0, deferred)
	require.Equal(t, 32.0, oneByOne)
	require.Len(t, slab[31].ID, engineIDLen)
}
