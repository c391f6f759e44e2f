package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue/store"
)

// runBaseline writes n values of c.size bytes straight to a Badger store in
// a temporary directory, from c.producers goroutines, c.batch values per
// Write, with a Sync after each Write when c.sync is always: what the
// storage does without the engine on top.
func runBaseline(ctx context.Context, n int64, c benchConfig, progress io.Writer) (*benchBaseline, error) {
	dir, err := os.MkdirTemp("", "equeue-baseline-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bo := store.DefaultBadgerOptions()
	st, err := store.OpenBadger(dir, &bo)
	if err != nil {
		return nil, err
	}
	value := make([]byte, c.size)
	_, _ = rand.Read(value)
	syncEach := c.sync == "always"

	bar := newBar(n, "baseline", progress)
	var (
		written  atomic.Int64
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	start := time.Now()
	for w := 0; w < c.producers; w++ {
		// Writer w writes its share into a queue of its own, offsets from 0.
		share := n / int64(c.producers)
		if int64(w) < n%int64(c.producers) {
			share++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			q := store.QueueID{Topic: 1, Queue: uint32(w)}
			for off := int64(0); off < share; {
				if ctx.Err() != nil {
					errOnce.Do(func() { firstErr = ctx.Err() })
					return
				}
				k := min(int64(c.batch), share-off)
				b := &store.Batch{Entries: make([]store.Entry, k)}
				for i := range b.Entries {
					b.Entries[i] = store.Entry{Queue: q, Offset: uint64(off) + uint64(i), Value: value}
				}
				err := st.Write(b)
				if err == nil && syncEach {
					err = st.Sync()
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				off += k
				written.Add(k)
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
loop:
	for {
		select {
		case <-done:
			break loop
		case <-tick.C:
			_ = bar.Set64(written.Load())
		}
	}
	elapsed := time.Since(start)
	_ = bar.Set64(written.Load())
	_ = bar.Finish()
	fmt.Fprintln(progress)
	if cerr := st.Close(); cerr != nil && firstErr == nil {
		firstErr = cerr
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return &benchBaseline{
		Store: "badger", Values: n, Size: c.size, Writers: c.producers, Batch: c.batch, Sync: c.sync,
		ElapsedSec: elapsed.Seconds(), MsgsPerSec: rate(n, elapsed), MBPerSec: mbRate(n, c.size, elapsed),
	}, nil
}
