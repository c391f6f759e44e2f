package equeue

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCodec_RecordAllocatedExactly: the encoder sizes a record exactly for
// every combination of fields, and encoding an engine ID from its raw bytes
// (as the append path does) writes the same record as parsing its string.
func TestCodec_RecordAllocatedExactly(t *testing.T) {
	ids := newIDSource()
	now := time.Now()
	raw, at := ids.nextRaw(now)
	engine := formatEngineID(raw)
	later := now.Add(time.Hour)
	long := string(make([]byte, 200)) // lengths that take two varint bytes
	cases := map[string]*Message{
		"body only":     {Body: []byte("b")},
		"empty":         {},
		"string id":     {ID: "order-17"},
		"long id":       {ID: long},
		"producer born": {BornAt: now.Add(-time.Minute)},
		"attempt":       {Attempt: 300},
		"deliver":       {DeliverAt: later},
		"expires":       {ExpiresAt: later, BornAt: now},
		"expired past":  {ExpiresAt: now.Add(-24 * time.Hour)},
		"tag":           {Tag: "A"},
		"long tag":      {Tag: long},
		"keys":          {Keys: []string{"k", "", long}},
		"properties":    {Properties: map[string]string{"a": "1", "": "", long: long}},
		"sys":           {sys: map[string]string{"origin": "t"}},
		"everything": {ID: "x", Tag: "t", Keys: []string{"k"}, Properties: map[string]string{"p": "v"},
			Body: make([]byte, 300), Attempt: 2, DeliverAt: later, ExpiresAt: later.Add(time.Hour), sys: map[string]string{"s": "v"}},
	}
	for name, m := range cases {
		for _, id := range []string{m.ID, engine} {
			t.Run(fmt.Sprintf("%s/id=%.8s", name, id), func(t *testing.T) {
				born := m.BornAt
				if born.IsZero() {
					born = at
				}
				rec := encodeRecord(m, id, born)
				assert.Equal(t, len(rec), cap(rec), "record allocated at its length")
				if id == engine {
					fast := encodeRecordID(m, id, raw, true, born)
					if len(m.Properties) < 2 { // else map order may differ
						assert.Equal(t, rec, fast, "raw engine ID encodes as the parsed one")
					}
					assert.Equal(t, len(fast), cap(fast))
				}
				sealRecord(rec, now)
				got, err := decodeRecord(rec)
				require.NoError(t, err)
				assert.Equal(t, id, got.ID)
				assert.Equal(t, m.Tag, got.Tag)
				assert.Equal(t, len(m.Keys), len(got.Keys))
				assert.Equal(t, len(m.Properties), len(got.Properties))
			})
		}
	}
}
