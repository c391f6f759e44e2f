package equeue

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleRecord() []byte {
	m := &Message{Tag: "t", Keys: []string{"a", "b"}, Properties: map[string]string{"x": "y"}, Body: []byte("hello"),
		ExpiresAt: time.Unix(100, 0), DeliverAt: time.Unix(50, 0), Attempt: 3, sys: map[string]string{"s": "v"}}
	rec := encodeRecord(m, "id-1", time.Unix(10, 5))
	sealRecord(rec, time.Unix(20, 7))
	return rec
}

func TestCodec_RoundTrip(t *testing.T) {
	m, err := decodeRecord(sampleRecord())
	require.NoError(t, err)
	assert.Equal(t, "id-1", m.ID)
	assert.Equal(t, "t", m.Tag)
	assert.Equal(t, []string{"a", "b"}, m.Keys)
	assert.Equal(t, map[string]string{"x": "y"}, m.Properties)
	assert.Equal(t, map[string]string{"s": "v"}, m.sys)
	assert.Equal(t, []byte("hello"), m.Body)
	assert.Equal(t, 3, m.Attempt)
	assert.True(t, m.BornAt.Equal(time.Unix(10, 5)))
	assert.True(t, m.StoredAt.Equal(time.Unix(20, 7)))
	assert.True(t, m.DeliverAt.Equal(time.Unix(50, 0)))
	assert.True(t, m.ExpiresAt.Equal(time.Unix(100, 0)))
}

// TestCodec_EveryFlippedBitDetected flips each bit of a record in turn.
func TestCodec_EveryFlippedBitDetected(t *testing.T) {
	rec := sampleRecord()
	for i := range rec {
		for bit := 0; bit < 8; bit++ {
			b := bytes.Clone(rec)
			b[i] ^= 1 << bit
			_, err := decodeRecord(b)
			require.Error(t, err, "byte %d bit %d", i, bit)
			require.True(t, errors.Is(err, ErrCorrupt))
		}
	}
	for n := range rec {
		_, err := decodeRecord(rec[:n])
		require.ErrorIs(t, err, ErrCorrupt, "truncated to %d", n)
	}
}

// FuzzDecodeRecord checks the decoder never panics and that whatever it
// accepts re-encodes to the same bytes' meaning.
func FuzzDecodeRecord(f *testing.F) {
	f.Add(sampleRecord())
	f.Add([]byte{})
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Unsealed fuzz input rarely passes the checksum; when it does the
		// message must survive a re-encode.
		re := encodeRecord(m, m.ID, m.BornAt)
		sealRecord(re, m.StoredAt)
		m2, err := decodeRecord(re)
		if err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		if m2.ID != m.ID || m2.Tag != m.Tag || !bytes.Equal(m2.Body, m.Body) || len(m2.Keys) != len(m.Keys) {
			t.Fatalf("round trip changed the message")
		}
	})
}

// FuzzDecodeSealed fuzzes the bytes after the version and checksum with a
// valid checksum, so the field decoders themselves are exercised, for both
// record versions the decoder reads.
func FuzzDecodeSealed(f *testing.F) {
	f.Add(byte(recordVersion), sampleRecord()[5:])
	f.Add(byte(recordVersion1), sampleRecordV1()[5:])
	f.Add(byte(recordVersion), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add(byte(recordVersion), []byte{flagMore, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, version byte, tail []byte) {
		b := append([]byte{version, 0, 0, 0, 0}, tail...)
		sealRecord(b, time.Unix(1, 0))
		if _, err := decodeRecord(b); err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error %v does not wrap ErrCorrupt", err)
		}
	})
}

// FuzzRecordRoundTrip builds messages from fuzzed fields: every message the
// append path accepts (validateMessage) encodes to a record that decodes to
// the same message, and every one it refuses is refused with
// ErrInvalidArgument.
func FuzzRecordRoundTrip(f *testing.F) {
	f.Add("id", "tag", "k1", "k2", "p", "v", []byte("body"), int64(0), int64(10), int64(5), int64(0), int64(50), int64(0), int64(100), int64(0))
	f.Add("", "", "", "", "", "", []byte{}, int64(1<<30-1), int64(0), int64(0), int64(0), int64(0), int64(0), int64(0), int64(0))
	f.Add("x", "", "", "", "", "", []byte(nil), int64(-1), int64(-9223372036), int64(-854775808), int64(9223372036), int64(854775807), int64(1), int64(0), int64(0))
	f.Add("x", "", "", "", "", "", []byte(nil), int64(1<<31), int64(-14831769600), int64(0), int64(0), int64(0), int64(32503680000), int64(0), int64(0))
	f.Add("x", "", "", "", "", "", []byte(nil), int64(1<<30), int64(0), int64(1), int64(32503680000), int64(0), int64(-1), int64(999999999), int64(0))
	f.Fuzz(func(t *testing.T, id, tag, k1, k2, pk, pv string, body []byte, attempt, bornS, bornN, delS, delN, expS, expN int64, sysN int64) {
		at := func(s, n int64) time.Time {
			if s == 0 && n == 0 {
				return time.Time{}
			}
			return time.Unix(s, n)
		}
		m := &Message{ID: id, Tag: tag, Body: body, Attempt: int(attempt),
			BornAt: at(bornS, bornN), DeliverAt: at(delS, delN), ExpiresAt: at(expS, expN)}
		if k1 != "" || k2 != "" {
			m.Keys = []string{k1, k2}
		}
		if pk != "" {
			m.Properties = map[string]string{pk: pv}
		}
		if sysN != 0 {
			m.sys = map[string]string{"n": fmt.Sprint(sysN)}
		}
		v, err := validateMessage(0, m, false)
		if err != nil {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("refusal %v does not wrap ErrInvalidArgument", err)
			}
			return
		}
		born := v.BornAt
		if born.IsZero() {
			born = time.Now()
		}
		rec := encodeRecord(v, v.ID, born)
		stored := time.Now()
		sealRecord(rec, stored)
		got, err := decodeRecord(rec)
		if err != nil {
			t.Fatalf("accepted message does not decode: %v", err)
		}
		sameTime := func(name string, a, b time.Time) {
			if a.IsZero() != b.IsZero() || !a.Equal(b) {
				t.Fatalf("%s: stored %v, read back %v", name, a, b)
			}
		}
		sameTime("born-at", born, got.BornAt)
		sameTime("stored-at", stored, got.StoredAt)
		sameTime("deliver-at", v.DeliverAt, got.DeliverAt)
		sameTime("expires-at", v.ExpiresAt, got.ExpiresAt)
		if !v.ExpiresAt.Equal(m.ExpiresAt) && !(m.ExpiresAt.After(maxRecordTime) && v.ExpiresAt.IsZero()) {
			t.Fatalf("expires-at changed from %v to %v", m.ExpiresAt, v.ExpiresAt)
		}
		if got.ID != v.ID || got.Tag != v.Tag || got.Attempt != v.Attempt || !bytes.Equal(got.Body, v.Body) ||
			!slices.Equal(got.Keys, v.Keys) || !maps.Equal(got.Properties, v.Properties) || !maps.Equal(got.sys, v.sys) {
			t.Fatalf("round trip changed the message:\n%+v\n%+v", v, got)
		}
	})
}

func TestValidateMessage_Limits(t *testing.T) {
	year := func(y int) time.Time { return time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC) }
	for name, m := range map[string]*Message{
		"attempt -1":      {Attempt: -1},
		"attempt 1<<30":   {Attempt: 1 << 30},
		"attempt 1<<31":   {Attempt: 1 << 31},
		"born 1500":       {BornAt: year(1500)},
		"born 2300":       {BornAt: year(2300)},
		"born at epoch":   {BornAt: time.Unix(0, 0)},
		"deliver 1500":    {DeliverAt: year(1500)},
		"deliver 3000":    {DeliverAt: year(3000)},
		"expires 1500":    {ExpiresAt: year(1500)},
		"expires at zero": {ExpiresAt: time.Unix(0, 0)},
	} {
		_, err := validateMessage(0, m, false)
		assert.ErrorIs(t, err, ErrInvalidArgument, name)
	}
	_, err := validateMessage(0, &Message{DeliverAt: year(3000)}, false)
	assert.ErrorIs(t, err, ErrInvalidDelay, "a delivery time beyond 2262 is also an invalid delay")

	far := &Message{ExpiresAt: year(3000), Attempt: 1<<30 - 1, BornAt: year(1700)}
	v, err := validateMessage(0, far, false)
	require.NoError(t, err)
	assert.True(t, v.ExpiresAt.IsZero(), "an expiry after 2262 means never")
	assert.Equal(t, year(3000), far.ExpiresAt, "the caller's message is not modified")
}

// TestValidateMessage_Plain: a message with no times and no attempt (most
// sends) is stored as it is, without a copy, and its ID is still held to
// MaxIDBytes unless it is a stored message sent again.
func TestValidateMessage_Plain(t *testing.T) {
	m := &Message{Body: []byte("b"), Keys: []string{"k"}, ID: strings.Repeat("i", MaxIDBytes)}
	v, err := validateMessage(0, m, false)
	require.NoError(t, err)
	assert.Same(t, m, v)
	assert.Zero(t, testing.AllocsPerRun(100, func() { _, _ = validateMessage(0, m, false) }))

	long := &Message{ID: strings.Repeat("i", MaxIDBytes+1)}
	_, err = validateMessage(0, long, false)
	assert.ErrorIs(t, err, ErrInvalidArgument)
	v, err = validateMessage(0, long, true)
	require.NoError(t, err)
	assert.Same(t, long, v)
}
