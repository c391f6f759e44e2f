package cluster

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/stretchr/testify/require"

	"github.com/equeue-go/equeue/store"
)

// BenchmarkFSM_ApplyBatch applies write entries shaped like the cluster's
// SendBatch benchmark (each entry a writer batch of 16 sends of 32 records
// of 150 bytes, the sends to 4 queues in turn), 3 entries per ApplyBatch,
// to a store on disk whose memtable takes them all. It measures the FSM and its store alone, without
// Raft, the network or other nodes:
//
//	go test -run '^$' -bench FSM_ApplyBatch -benchmem -benchtime 200x ./cluster/
//
// segments=node packs records as a node does (NodeSegmentBytes, in Badger's
// value log); segments=inline as a single engine does (below the value
// threshold, in the LSM tree).
func BenchmarkFSM_ApplyBatch(b *testing.B) {
	b.Run("segments=node", func(b *testing.B) { benchFSMApplyBatch(b, NodeSegmentBytes) })
	b.Run("segments=inline", func(b *testing.B) { benchFSMApplyBatch(b, 0) })
}

func benchFSMApplyBatch(b *testing.B, segmentBytes int64) {
	const (
		queues  = 4
		sends   = 16
		perSend = 32
		perCall = 3
	)
	// Memtables large enough that no flush runs during the benchmark: a
	// flush costs the same whatever the FSM does.
	bo := store.DefaultBadgerOptions()
	bo.MemTableSize = 256 << 20
	bo.SegmentBytes = segmentBytes
	st, err := store.OpenBadger(b.TempDir(), &bo)
	require.NoError(b, err)
	defer func() { require.NoError(b, st.Close()) }()
	f, err := newFSM(st, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(b, err)
	require.Nil(b, f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: encodeTenure(1, "n1", "c1", "")}))
	value := make([]byte, 150)
	next := make([]uint64, queues)
	index := uint64(1)
	entry := func() *raft.Log {
		sb := &store.Batch{}
		for s := range sends {
			q := s % queues
			for range perSend {
				sb.Entries = append(sb.Entries, store.Entry{Queue: store.QueueID{Topic: 1, Queue: uint32(q)}, Offset: next[q], Value: value})
				next[q]++
			}
		}
		index++
		return &raft.Log{Index: index, Type: raft.LogCommand, Data: encodeBatch(1, sb)}
	}
	b.ReportAllocs()
	b.SetBytes(int64(sends * perSend * perCall * len(value)))
	var msgs int
	var cpu time.Duration
	cpuOK := true
	for b.Loop() {
		b.StopTimer()
		logs := make([]*raft.Log, perCall)
		for i := range logs {
			logs[i] = entry()
		}
		b.StartTimer()
		cpu0, ok0 := processCPU()
		for _, a := range f.ApplyBatch(logs) {
			if a != nil {
				b.Fatal(a)
			}
		}
		cpu1, ok1 := processCPU()
		cpu += cpu1 - cpu0
		cpuOK = cpuOK && ok0 && ok1
		msgs += sends * perSend * perCall
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(msgs), "ns/msg")
	if cpuOK {
		// Process CPU time while ApplyBatch ran: less sensitive to other
		// work on the machine than the elapsed time.
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(msgs), "cpu-ns/msg")
	}
}
