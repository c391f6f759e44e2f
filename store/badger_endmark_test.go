package store

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/internal/crashsim"
)

// valueLogRecord is record off of the valueLogQueue tests: about 200
// bytes, starting with its offset, so that ten make a segment that goes to
// the value log.
func valueLogRecord(off uint64) []byte {
	return fmt.Appendf(nil, "rec-%04d %0200d", off, off)
}

// valueLogOptions keep segments of up to 16 KiB in Badger's value log, as
// the nodes of package cluster do.
func valueLogOptions() *BadgerOptions {
	return &BadgerOptions{SegmentBytes: 16 << 10}
}

// writeValueLogQueue writes batches of ten records to q, each batch one
// segment in the value log, and closes the store.
func writeValueLogQueue(t *testing.T, dir string, q QueueID, batches int) {
	t.Helper()
	s, err := OpenBadger(dir, valueLogOptions())
	require.NoError(t, err)
	for b := range uint64(batches) {
		var batch Batch
		for off := b * 10; off < b*10+10; off++ {
			batch.Entries = append(batch.Entries, Entry{Queue: q, Offset: off, Value: valueLogRecord(off)})
		}
		require.NoError(t, s.Write(&batch))
	}
	require.NoError(t, s.Sync())
	require.NoError(t, s.Close())
}

// One flipped byte in an early entry of the last value-log file makes
// Badger cut the file there when it opens: the segments after it lose
// their values while their keys stay. The queue still ends where it did
// (found by review: it ended one past the last segment's first offset, and
// the next appends were given offsets of records already stored), and
// every lost offset reads as a record with no value, as damage does.
func TestBadger_ValueLogCutKeepsTheQueueEnd(t *testing.T) {
	dir := t.TempDir()
	q := QueueID{Topic: 1, Queue: 2}
	writeValueLogQueue(t, dir, q, 3)
	crashsim.FlipInLastValueLog(t, dir, valueLogRecord(12)) // in the second segment

	s, err := OpenBadger(dir, valueLogOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	first, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	require.Equal(t, []any{uint64(0), uint64(30), true}, []any{first, next, ok}, "the queue ends where it did")

	var want []Record
	for off := range uint64(10) {
		want = append(want, Record{Offset: off, Value: valueLogRecord(off)})
	}
	for off := uint64(10); off < 30; off++ {
		want = append(want, Record{Offset: off})
	}
	requireRecords(t, s, q, want)

	require.NoError(t, s.Write(&Batch{Entries: []Entry{{Queue: q, Offset: next, Value: []byte("appended")}}}))
	want = append(want, Record{Offset: next, Value: []byte("appended")})
	requireRecords(t, s, q, want)
}

// A store restored from a snapshot, which holds no end marks, gets them
// for the segments it loads into the value log: the same damage after the
// restore keeps the queue's end too.
func TestBadger_ValueLogCutAfterRestoreKeepsTheQueueEnd(t *testing.T) {
	src := t.TempDir()
	q := QueueID{Topic: 1, Queue: 2}
	writeValueLogQueue(t, src, q, 3)
	s, err := OpenBadger(src, valueLogOptions())
	require.NoError(t, err)
	sn, err := s.Snapshot()
	require.NoError(t, err)
	var buf bytes.Buffer
	_, err = sn.WriteTo(&buf)
	require.NoError(t, err)
	sn.Release()
	require.NoError(t, s.Close())

	dir := t.TempDir()
	s, err = OpenBadger(dir, valueLogOptions())
	require.NoError(t, err)
	require.NoError(t, s.Restore(&buf))
	require.NoError(t, s.Close())
	crashsim.FlipInLastValueLog(t, dir, valueLogRecord(12))

	s, err = OpenBadger(dir, valueLogOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	_, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(30), next, "the queue ends where it did")
}

// A queue dropped and written again from its start does not end at the
// end mark of its earlier records: a damaged last segment of what is
// written again in the LSM tree, which sets no mark, is not taken to reach
// it.
func TestBadger_DropQueueDropsTheEndMark(t *testing.T) {
	dir := t.TempDir()
	q := QueueID{Topic: 1, Queue: 2}
	writeValueLogQueue(t, dir, q, 3)
	s, err := OpenBadger(dir, valueLogOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, s.DropQueue(q))
	var batch Batch
	for off := range uint64(3) {
		batch.Entries = append(batch.Entries, Entry{Queue: q, Offset: off, Value: []byte("small")})
	}
	require.NoError(t, s.Write(&batch))
	damageSegmentWith(t, s, q, 0, segmentDamages["lost"])

	_, next, ok, err := s.Bounds(q)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, uint64(1), next, "a lost last segment with no mark of its own holds one record")
}

// A batch within Limits commits whatever end marks it takes: one of as many
// queues as it has records, each record alone in a segment in the value
// log, or two records to a queue, each pair a segment in the value log.
func TestBadger_EndMarksFitTheLimits(t *testing.T) {
	for name, per := range map[string]int{"one record a queue": 1, "two records a queue": 2} {
		t.Run(name, func(t *testing.T) {
			s, err := OpenBadger(t.TempDir(), &BadgerOptions{MemTableSize: 1 << 20, ValueThreshold: 64, SegmentBytes: 1024})
			require.NoError(t, err)
			defer func() { require.NoError(t, s.Close()) }()
			l := s.Limits()
			var b Batch
			for i := 0; len(b.Entries)+per <= l.MaxEntries; i++ {
				for off := range per {
					b.Entries = append(b.Entries, Entry{Queue: QueueID{Topic: 1, Queue: uint32(i)}, Offset: uint64(off), Value: []byte(fmt.Sprintf("%070d", off))})
				}
			}
			require.True(t, l.Allows(&b), "within the limits")
			require.NoError(t, s.Write(&b))
			_, next, ok, err := s.Bounds(QueueID{Topic: 1, Queue: 7})
			require.NoError(t, err)
			require.Equal(t, []any{uint64(per), true}, []any{next, ok})
		})
	}
}
