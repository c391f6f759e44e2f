package kafka

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue"
)

// TestRecordMarks_IDsKeepTheirForm: the IDs setIDs gives, made without
// an allocation per mark, are the producer's name followed by the first
// bytes of the HMAC-SHA256 of "<topic length>:<topic><name>", as records
// stored before read back, and unmark takes each of them back, in
// batches of records of more than one length, across the wrap of
// sequence numbers.
func TestRecordMarks_IDsKeepTheirForm(t *testing.T) {
	key := []byte("k")
	k := newRecordMarks(key)
	b := &producedBatch{producerID: 42, producerEpoch: 3, firstSeq: 2147483646}
	for range 3 {
		b.msgs = append(b.msgs, &equeue.Message{})
	}
	k.setIDs(b, "topic", 5)
	mk := k.mac()
	for i, name := range []string{"kafka-42-3-5-2147483646", "kafka-42-3-5-2147483647", "kafka-42-3-5-0"} {
		h := hmac.New(sha256.New, key)
		h.Write([]byte("5:topic" + name))
		want := name + "-" + hex.EncodeToString(h.Sum(nil)[:markLen])
		require.Equal(t, want, b.msgs[i].ID)
		got, ok, _ := mk.unmark("topic", b.msgs[i].ID)
		assert.True(t, ok)
		assert.Equal(t, name, got)
		_, ok, _ = mk.unmark("other", b.msgs[i].ID)
		assert.False(t, ok, "a mark holds for its topic only")
	}
}
