package store_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/equeue-go/equeue/store"
)

// benchStore names a store the benchmarks run on and opens a fresh one.
type benchStore struct {
	name string
	open func(b *testing.B) storeAPI
}

var benchStores = []benchStore{
	{"memory", func(*testing.B) storeAPI { return store.NewMemory() }},
	{"badger", func(b *testing.B) storeAPI {
		s, err := store.OpenBadger(b.TempDir(), nil)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}},
}

func closeBench(b *testing.B, s storeAPI) {
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWrite appends batches of 64 records of 100 bytes to one queue,
// with and without a Sync after each batch.
func BenchmarkWrite(b *testing.B) {
	const perBatch, size = 64, 100
	value := make([]byte, size)
	for _, bs := range benchStores {
		for _, sync := range []bool{false, true} {
			mode := "nosync"
			if sync {
				mode = "sync"
			}
			b.Run(bs.name+"/"+mode, func(b *testing.B) {
				s := bs.open(b)
				defer closeBench(b, s)
				q := store.QueueID{Topic: 1}
				batch := &store.Batch{Entries: make([]store.Entry, perBatch)}
				var off uint64
				b.SetBytes(perBatch * size)
				b.ReportAllocs()
				for b.Loop() {
					for i := range batch.Entries {
						batch.Entries[i] = store.Entry{Queue: q, Offset: off, Value: value}
						off++
					}
					if err := s.Write(batch); err != nil {
						b.Fatal(err)
					}
					if sync {
						if err := s.Sync(); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportMetric(float64(off)/b.Elapsed().Seconds(), "msgs/s")
			})
		}
	}
}

// BenchmarkRead reads 32 records of 100 bytes at a time from a queue of
// 64Ki records, walking it from start to end and over again.
func BenchmarkRead(b *testing.B) {
	const total, perRead, size = 1 << 16, 32, 100
	value := make([]byte, size)
	for _, bs := range benchStores {
		b.Run(bs.name, func(b *testing.B) {
			s := bs.open(b)
			defer closeBench(b, s)
			q := store.QueueID{Topic: 1}
			batch := &store.Batch{}
			for off := uint64(0); off < total; off++ {
				batch.Entries = append(batch.Entries, store.Entry{Queue: q, Offset: off, Value: value})
				if len(batch.Entries) == 1024 {
					if err := s.Write(batch); err != nil {
						b.Fatal(err)
					}
					batch.Entries = batch.Entries[:0]
				}
			}
			var from, read uint64
			b.SetBytes(perRead * size)
			b.ReportAllocs()
			for b.Loop() {
				recs, err := s.Read(q, from, total, perRead, 0)
				if err != nil {
					b.Fatal(err)
				}
				if len(recs) != perRead {
					b.Fatalf("read %d records at %d", len(recs), from)
				}
				read += uint64(len(recs))
				from = (from + perRead) % total
			}
			b.ReportMetric(float64(read)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

// BenchmarkMemoryMeta measures metadata writes (one set and one delete of
// random keys per batch) and a prefix scan that stops at its first key, on
// a memory store holding 200,000 metadata keys.
func BenchmarkMemoryMeta(b *testing.B) {
	const keys = 200_000
	key := func(i uint64) []byte {
		// Spread over the key space, as hashed dedup IDs are.
		return fmt.Appendf(nil, "d/%016x", i*0x9e3779b97f4a7c15)
	}
	fill := func(b *testing.B) *store.Memory {
		s := store.NewMemory()
		batch := &store.Batch{}
		for i := uint64(0); i < keys; i++ {
			batch.Meta = append(batch.Meta, store.MetaOp{Key: key(i), Value: []byte("v")})
			if len(batch.Meta) == 1000 {
				if err := s.Write(batch); err != nil {
					b.Fatal(err)
				}
				batch.Meta = batch.Meta[:0]
			}
		}
		return s
	}
	b.Run("write", func(b *testing.B) {
		s := fill(b)
		defer closeBench(b, s)
		next := uint64(keys)
		for b.Loop() {
			batch := &store.Batch{Meta: []store.MetaOp{
				{Key: key(next), Value: []byte("v")},
				{Key: key(next - keys), Delete: true},
			}}
			if err := s.Write(batch); err != nil {
				b.Fatal(err)
			}
			next++
		}
	})
	b.Run("scan-first", func(b *testing.B) {
		s := fill(b)
		defer closeBench(b, s)
		stop := errors.New("stop")
		for b.Loop() {
			err := s.ScanMeta([]byte("d/"), func(_, _ []byte) error { return stop })
			if !errors.Is(err, stop) {
				b.Fatal(err)
			}
		}
	})
}
