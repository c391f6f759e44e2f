package equeue

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanAgrees reports, with a reason, whether scanRecord says of b what
// decodeRecord does: the same error or none, and then the same tag and
// expiry; and whether scanStoredRetry says the same and finds the origin
// the decoded message names.
func scanAgrees(b []byte) (bool, string) {
	tag, expires, scanErr := scanRecord(b)
	rtag, rexpires, origin, retryErr := scanStoredRetry(b, false)
	m, decErr := decodeRecord(b)
	switch {
	case (scanErr == nil) != (decErr == nil):
		return false, "errors differ: scan " + errString(scanErr) + ", decode " + errString(decErr)
	case (retryErr == nil) != (decErr == nil):
		return false, "errors differ: retry scan " + errString(retryErr) + ", decode " + errString(decErr)
	case decErr != nil:
		return true, ""
	case string(tag) != m.Tag || string(rtag) != m.Tag:
		return false, "tags differ: " + string(tag) + " / " + string(rtag) + " / " + m.Tag
	case expires != nanos(m.ExpiresAt) || rexpires != expires:
		return false, "expiries differ"
	case string(origin.topic) != m.sys[SysOriginTopic] || string(origin.topicID) != m.sys[SysOriginTopicID]:
		return false, "origins differ: " + string(origin.topic) + "/" + string(origin.topicID) + " / " + m.sys[SysOriginTopic] + "/" + m.sys[SysOriginTopicID]
	}
	return true, ""
}

func errString(err error) string {
	if err == nil {
		return "none"
	}
	return err.Error()
}

// scanSeeds are records of every shape the encoder writes, of both
// versions, with and without each optional field.
func scanSeeds() [][]byte {
	born := time.Unix(1_700_000_000, 5)
	msgs := []*Message{
		{Body: []byte("plain")},
		{Tag: "A", Keys: []string{"k1", "", "k2"}, Properties: map[string]string{"a": "1", "": "x"},
			ExpiresAt: born.Add(time.Hour), DeliverAt: born.Add(time.Minute), Attempt: 7,
			sys: map[string]string{SysOriginTopic: "o", "other": "x", SysOriginTopicID: "42"}, Body: bytes.Repeat([]byte{9}, 300)},
		{Tag: "only-tag"},
		{ExpiresAt: born.Add(-time.Hour)},
		{},
	}
	var out [][]byte
	for i, m := range msgs {
		for _, id := range []string{"", "producer-id", "0123456789abcdef01234567"} {
			rec := encodeRecord(m, id, born.Add(time.Duration(i)))
			sealRecord(rec, born.Add(time.Second))
			out = append(out, rec)
		}
	}
	// The largest attempt, and the same record with one past the limit
	// (same varint length), which decoding refuses.
	top := encodeRecord(&Message{Attempt: maxRecordAttempt, Tag: "t"}, "", born)
	sealRecord(top, born)
	over := bytes.Replace(top, binary.AppendUvarint(nil, maxRecordAttempt), binary.AppendUvarint(nil, maxRecordAttempt+2), 1)
	binary.BigEndian.PutUint32(over[1:5], recordChecksum(over))
	return append(out, top, over, sampleRecordV1(), sampleRecord(), nil, []byte{0x80})
}

// scanRecord, which a transport's pull uses instead of decoding, fails on
// exactly the records decoding fails on, and otherwise reads the same tag
// and expiry: for every record shape, every cut, and every byte changed
// with the checksum made right again (so that the fields themselves are
// malformed), of both versions.
func TestScanRecord_AgreesWithDecode(t *testing.T) {
	reseal := func(b []byte) {
		if len(b) >= recordFixedSize && b[0]&recordV2Mark != 0 {
			binary.BigEndian.PutUint32(b[1:5], recordChecksum(b))
		}
	}
	checked, malformed := 0, 0
	seeds := scanSeeds()
	_, err := decodeRecord(seeds[len(seeds)-5])
	require.ErrorIs(t, err, ErrCorrupt, "the attempt past the limit is refused")
	for si, rec := range seeds {
		ok, why := scanAgrees(rec)
		require.True(t, ok, "seed %d: %s", si, why)
		for n := range rec {
			ok, why := scanAgrees(bytes.Clone(rec[:n]))
			require.True(t, ok, "seed %d cut at %d: %s", si, n, why)
		}
		for i := range rec {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := bytes.Clone(rec)
				b[i] ^= x
				reseal(b)
				ok, why := scanAgrees(b)
				require.True(t, ok, "seed %d byte %d ^ %#x: %s", si, i, x, why)
				checked++
				if _, err := decodeRecord(b); err != nil {
					malformed++
				}
			}
		}
	}
	assert.Greater(t, malformed, checked/20, "the changes reach the fields' own checks")
}

func FuzzScanRecord(f *testing.F) {
	for _, s := range scanSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) >= recordFixedSize && b[0]&recordV2Mark != 0 {
			binary.BigEndian.PutUint32(b[1:5], recordChecksum(b)) // reach the fields
		}
		if ok, why := scanAgrees(b); !ok {
			t.Fatal(why)
		}
	})
}
