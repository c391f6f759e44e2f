package equeue

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCodec_CompactSize pins what the compact format spends around a body:
// 21 bytes for a message sent with only a body (flags, checksum, born-at,
// stored-at delta, ID prefix), each optional field only when set.
func TestCodec_CompactSize(t *testing.T) {
	ids := newIDSource()
	now := time.Now()
	id, born := ids.next(now)
	body := make([]byte, 100)
	rec := encodeRecord(&Message{Body: body}, id, born)
	sealRecord(rec, now.Add(time.Millisecond))
	assert.Len(t, rec, 100+21)

	m, err := decodeRecord(rec)
	require.NoError(t, err)
	assert.Equal(t, id, m.ID)
	assert.True(t, m.BornAt.Equal(born))
	assert.True(t, m.StoredAt.Equal(now.Add(time.Millisecond)))
	assert.Equal(t, body, m.Body)

	noID := encodeRecord(&Message{Body: body}, "", now)
	assert.Len(t, noID, 100+17, "no ID: no ID bytes")
	tagged := encodeRecord(&Message{Body: body, Tag: "ab"}, id, born)
	assert.Len(t, tagged, 100+21+3, "a tag adds its length and bytes")
	later, _ := ids.next(now)
	producerBorn := encodeRecord(&Message{Body: body, BornAt: now}, later, now)
	assert.Len(t, producerBorn, 100+21+4+1, "a producer's born-at: a full stored-at and the ID counter's delta")
	sealRecord(producerBorn, now)
	m, err = decodeRecord(producerBorn)
	require.NoError(t, err)
	assert.Equal(t, later, m.ID)
}

// TestCodec_UnknownVersionRefused: a record of a version this build does not
// know is refused with ErrUnsupportedFormat (and ErrCorrupt), naming the
// version; a pull stops before it instead of skipping it
// (TestPull_RecordOfANewerFormatIsRefusedNotSkipped).
func TestCodec_UnknownVersionRefused(t *testing.T) {
	for _, v := range []byte{0, 2, 3, 0x7f} {
		rec := sampleRecord()
		rec[0] = v
		_, err := decodeRecord(rec)
		require.ErrorIs(t, err, ErrUnsupportedFormat, "version %d", v)
		require.ErrorIs(t, err, ErrCorrupt, "version %d", v)
		assert.Contains(t, err.Error(), fmt.Sprintf("version %d (", v), "the error names the version")
	}
	_, err := decodeRecord(sampleRecord())
	assert.False(t, errors.Is(err, ErrUnsupportedFormat))
}

// TestCodec_StoredDeltaRounding: the stored-at of a message whose born-at
// the engine stamped is kept in 4 bytes from born-at: exact to the
// nanosecond within 1.07 s, then rounded down to the microsecond, the
// millisecond, the second; never wrapped, and born-at itself when the clock
// stepped back.
func TestCodec_StoredDeltaRounding(t *testing.T) {
	born := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name   string
		stored time.Duration
		want   time.Duration
	}{
		{"same instant", 0, 0},
		{"nanoseconds", 1_073_741_823, 1_073_741_823},
		{"microseconds", 17*time.Minute + 1234567, 17*time.Minute + 1234000},
		{"milliseconds", 12*24*time.Hour + 1234567, 12*24*time.Hour + 1000000},
		{"seconds", 10 * 365 * 24 * time.Hour, 10 * 365 * 24 * time.Hour},
		{"beyond", 100 * 365 * 24 * time.Hour, (1<<30 - 1) * time.Second},
		{"before born", -time.Second, 0},
	} {
		rec := encodeRecord(&Message{Body: []byte("x")}, "", born)
		sealRecord(rec, born.Add(c.stored))
		m, err := decodeRecord(rec)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, m.StoredAt.Sub(born), c.name)
	}
	// A delayed message is moved, and resealed, when due: its stored-at is kept whole.
	rec := encodeRecord(&Message{Body: []byte("x"), DeliverAt: born.Add(48 * time.Hour)}, "", born)
	sealRecord(rec, born.Add(48*time.Hour+7))
	m, err := decodeRecord(rec)
	require.NoError(t, err)
	assert.True(t, m.StoredAt.Equal(born.Add(48*time.Hour+7)))
}

// TestIDSource_UniqueAndBornStamp: IDs of one source never repeat, even for
// many taken at one instant from several goroutines, and the time returned
// with each is the one its counter holds.
func TestIDSource_UniqueAndBornStamp(t *testing.T) {
	s := newIDSource()
	now := time.Now()
	var mu sync.Mutex
	seen := make(map[string]bool)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				id, at := s.next(now)
				rec := encodeRecord(&Message{}, id, at)
				sealRecord(rec, now)
				m, err := decodeRecord(rec)
				if !assert.NoError(t, err) || !assert.Equal(t, id, m.ID) {
					return
				}
				mu.Lock()
				seen[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, seen, 4000)
}
