package cluster

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

func TestEntry_RoundTrip(t *testing.T) {
	b := &store.Batch{
		Entries: []store.Entry{{Queue: store.QueueID{Topic: 3, Queue: 1}, Offset: 77, Value: []byte("hello")}, {Queue: store.QueueID{Topic: 3, Queue: 1}, Offset: 78, Value: []byte{}}},
		Meta:    []store.MetaOp{{Key: []byte("k"), Value: []byte("v")}, {Key: []byte("gone"), Delete: true}},
	}
	e, err := decodeEntry(encodeBatch(42, b))
	require.NoError(t, err)
	assert.Equal(t, entryBatch, e.kind)
	assert.Equal(t, uint64(42), e.tenure)
	require.Len(t, e.batch.Entries, 2)
	assert.Equal(t, b.Entries[0].Queue, e.batch.Entries[0].Queue)
	assert.Equal(t, uint64(78), e.batch.Entries[1].Offset)
	assert.Equal(t, "hello", string(e.batch.Entries[0].Value))
	assert.Equal(t, b.Meta[1].Delete, e.batch.Meta[1].Delete)
	assert.Equal(t, "v", string(e.batch.Meta[0].Value))

	e, err = decodeEntry(encodeTenure(7, "n1", "127.0.0.1:1", ""))
	require.NoError(t, err)
	assert.Equal(t, entry{kind: entryTenure, tenure: 7, nodeID: "n1", clientAddr: "127.0.0.1:1"}, *e)

	e, err = decodeEntry(encodeTenure(8, "n2", "127.0.0.1:1", "127.0.0.1:9092"))
	require.NoError(t, err)
	assert.Equal(t, entry{kind: entryTenure, tenure: 8, nodeID: "n2", clientAddr: "127.0.0.1:1", kafkaAddr: "127.0.0.1:9092"}, *e)

	e, err = decodeEntry(encodeRange(entryDelete, 9, store.QueueID{Topic: 1, Queue: 2}, 5, 10))
	require.NoError(t, err)
	assert.Equal(t, entry{kind: entryDelete, tenure: 9, queue: store.QueueID{Topic: 1, Queue: 2}, from: 5, to: 10}, *e)

	full := encodeBatch(1, b)
	for cut := range len(full) {
		_, err := decodeEntry(full[:cut])
		assert.ErrorIs(t, err, errBadEntry, "cut at %d", cut)
	}
}

// A tenure entry without a Kafka address is written as versions before
// the address wrote it (kind, tenure, two length-prefixed strings), so
// they read it; and that format still decodes.
func TestEntry_TenureWithoutKafkaKeepsTheOldFormat(t *testing.T) {
	old := []byte{byte(entryTenure), 0, 0, 0, 0, 0, 0, 0, 5, 2, 'n', '1', 3, 'c', ':', '1'}
	assert.Equal(t, old, encodeTenure(5, "n1", "c:1", ""))
	e, err := decodeEntry(old)
	require.NoError(t, err)
	assert.Equal(t, entry{kind: entryTenure, tenure: 5, nodeID: "n1", clientAddr: "c:1"}, *e)

	withKafka := encodeTenure(5, "n1", "c:1", "k:9")
	for cut := len(old) + 1; cut < len(withKafka); cut++ {
		_, err := decodeEntry(withKafka[:cut])
		assert.ErrorIs(t, err, errBadEntry, "cut at %d", cut)
	}
}

// The FSM's state keeps the leader's Kafka address, and a state written
// without one (by an older version, or a cluster without Kafka) decodes
// with none.
func TestState_KafkaAddress(t *testing.T) {
	with := fsmState{applied: 3, tenure: 9, leaderID: "n1", clientAddr: "c:1", kafkaAddr: "k:9"}
	got, err := decodeState(with.encode())
	require.NoError(t, err)
	assert.Equal(t, with, got)

	without := fsmState{applied: 3, tenure: 9, leaderID: "n1", clientAddr: "c:1"}
	b := without.encode()
	assert.Len(t, b, 16+3+4, "no Kafka address, no bytes for it")
	got, err = decodeState(b)
	require.NoError(t, err)
	assert.Equal(t, without, got)
}

// FuzzDecodeEntry: any bytes decode to an entry or errBadEntry, never a
// panic, and a decoded batch encodes to bytes that decode to the same
// batch (varints may be written longer than needed, so not to the same
// bytes).
func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeTenure(1, "a", "b", ""))
	f.Add(encodeTenure(1, "a", "b", "c"))
	f.Add(encodeBatch(2, &store.Batch{Entries: []store.Entry{{Offset: 1, Value: []byte("x")}}, Meta: []store.MetaOp{{Key: []byte("k")}}}))
	f.Add(encodeRange(entryDrop, 3, store.QueueID{Topic: 1}, 0, 0))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEntry(data)
		if err != nil {
			require.ErrorIs(t, err, errBadEntry)
			return
		}
		if e.kind == entryBatch {
			again, err := decodeEntry(encodeBatch(e.tenure, e.batch))
			require.NoError(t, err)
			assert.Equal(t, len(e.batch.Entries), len(again.batch.Entries))
			assert.Equal(t, len(e.batch.Meta), len(again.batch.Meta))
			for i := range e.batch.Entries {
				assert.Equal(t, e.batch.Entries[i].Offset, again.batch.Entries[i].Offset)
				assert.Equal(t, string(e.batch.Entries[i].Value), string(again.batch.Entries[i].Value))
			}
		}
	})
}

// Decoding into a reused batch gives what a fresh decode gives: nothing
// of a longer entry decoded before is left, not even a meta op's Delete.
func TestEntry_DecodeIntoReusedBatch(t *testing.T) {
	long := &store.Batch{
		Entries: []store.Entry{{Queue: store.QueueID{Topic: 1}, Offset: 1, Value: []byte("a")}, {Queue: store.QueueID{Topic: 1}, Offset: 2, Value: []byte("b")}, {Queue: store.QueueID{Topic: 2}, Offset: 9, Value: []byte("c")}},
		Meta:    []store.MetaOp{{Key: []byte("gone"), Delete: true}, {Key: []byte("k"), Value: []byte("v")}},
	}
	short := &store.Batch{
		Entries: []store.Entry{{Queue: store.QueueID{Topic: 3, Queue: 1}, Offset: 5, Value: []byte("x")}},
		Meta:    []store.MetaOp{{Key: []byte("set"), Value: []byte("1")}},
	}
	var reused store.Batch
	_, err := decodeEntryInto(encodeBatch(1, long), &reused)
	require.NoError(t, err)
	e, err := decodeEntryInto(encodeBatch(2, short), &reused)
	require.NoError(t, err)
	fresh, err := decodeEntry(encodeBatch(2, short))
	require.NoError(t, err)
	assert.Equal(t, fresh.batch.Entries, e.batch.Entries)
	assert.Equal(t, fresh.batch.Meta, e.batch.Meta)
	assert.False(t, e.batch.Meta[0].Delete)

	// A batch entry without records or metadata leaves none either.
	e, err = decodeEntryInto(encodeBatch(3, &store.Batch{}), &reused)
	require.NoError(t, err)
	assert.Empty(t, e.batch.Entries)
	assert.Empty(t, e.batch.Meta)
}

// A limits entry, and a state holding limits, read back as written; a
// state with limits stays readable by versions before them (the Kafka
// address comes first, the limits after what they read).
func TestEntry_LimitsRoundTrip(t *testing.T) {
	l := store.Limits{MaxEntries: 819, MaxBytes: 102245, ValueThreshold: 1024, MaxValueSize: 64 << 20}
	e, err := decodeEntry(encodeLimits(7, l))
	require.NoError(t, err)
	assert.Equal(t, entry{kind: entryLimits, tenure: 7, limits: l}, *e)
	s := fsmState{applied: 3, tenure: 7, leaderID: "n1", clientAddr: "c:1", limits: l}
	got, err := decodeState(s.encode())
	require.NoError(t, err)
	assert.Equal(t, s, got)
	assert.True(t, takes(l, l))
	small := l
	small.MaxBytes--
	assert.False(t, takes(small, l))
	heavier := l
	heavier.ValueThreshold++
	assert.False(t, takes(heavier, l))
}
