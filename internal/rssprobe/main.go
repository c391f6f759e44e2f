// Command rssprobe measures what a backlog costs a program that does nothing
// else in resident memory: it opens an engine on a Badger directory (a
// temporary one unless -dir is given), writes -n messages of -body bytes at
// full speed (-senders goroutines calling SendBatch with -batch messages,
// SyncAlways), then lets the engine sit idle, closes it, opens it again and
// prints its resident set sizes as JSON (Report). BenchmarkBacklogRSS builds
// and runs it; it is not part of the API.
//
// RSS is read from /proc/self/status (Linux): VmRSS now, VmHWM for the peak.
// "Settled" figures are taken after runtime.GC and debug.FreeOSMemory, which
// return freed heap pages to the OS at once, as the runtime's background
// scavenger would in a few minutes. The program sets no GC knob of its own;
// GOGC and GOMEMLIMIT from the environment apply as usual. CPUMicrosPerMsg
// is the process's user and system CPU time (getrusage) at the end of the
// write, per message.
//
// For finding where memory goes: -heapprofile writes a heap profile at the
// settled idle point; RSSPROBE_PEAKHEAP=file rewrites a heap profile each
// time the sampled heap grows by 10% during the write; RSSPROBE_SMAPS=file
// copies /proc/self/smaps at the idle point, RSSPROBE_PEAKSMAPS=file each
// time the sampled RssFile reaches a new high during the write. -basetable,
// -memtable and -golimit set those store.BadgerOptions fields over what
// the budget gives.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/store"
)

// Report is what the program prints. Sizes are in KiB.
type Report struct {
	// Messages and Body say what was written.
	Messages, Body int
	// Budget is Options.MemoryBudget (0: default options).
	Budget int64
	// BaseKiB is the settled RSS before the engine opened.
	BaseKiB int64
	// WritePeakKiB is VmHWM at the end of the write: the peak resident
	// set of the whole run so far. WriteMaxSampledKiB is the largest
	// VmRSS sampled every 10 ms during the write.
	WritePeakKiB, WriteMaxSampledKiB int64
	// WriteHeapInuseKiB is the largest Go HeapInuse sampled during the
	// write; WriteAnonKiB and WriteFileKiB are the largest RssAnon and
	// RssFile sampled.
	WriteHeapInuseKiB, WriteAnonKiB, WriteFileKiB int64
	// WriteSeconds is how long the write took; CPUMicrosPerMsg the
	// process's CPU time (user and system) at its end, per message (0
	// where getrusage is missing).
	WriteSeconds, CPUMicrosPerMsg float64
	// IdleKiB is VmRSS after the write and an idle period (-idle), without
	// help; IdleSettledKiB the same after GC and FreeOSMemory.
	IdleKiB, IdleSettledKiB int64
	// IdleHeapInuseKiB is the Go heap in use at the settled idle point;
	// IdleAnonKiB and IdleFileKiB split IdleSettledKiB into anonymous
	// memory (Go heap, stacks, runtime) and mapped file pages (Badger's
	// memory-mapped tables and logs).
	IdleHeapInuseKiB, IdleAnonKiB, IdleFileKiB int64
	// ReopenKiB is the settled RSS with the engine closed and opened again
	// on the same directory (and its topic read once); ReopenFileKiB its
	// mapped file pages.
	ReopenKiB, ReopenFileKiB int64
}

func main() {
	n := flag.Int("n", 200_000, "messages to write")
	body := flag.Int("body", 100, "body size in bytes")
	senders := flag.Int("senders", 4, "goroutines calling SendBatch")
	batch := flag.Int("batch", 1024, "messages per SendBatch")
	budget := flag.Int64("budget", 0, "Options.MemoryBudget in bytes (0: default options)")
	idle := flag.Duration("idle", 2*time.Second, "idle period after the write")
	dir := flag.String("dir", "", "engine directory (default: a new temporary one, removed at exit)")
	heap := flag.String("heapprofile", "", "write a heap profile at the settled idle point to this file")
	keepIdle := flag.Bool("keepidle", false, "set store.BadgerOptions.KeepOSMemoryWhenIdle (with -budget: do not return the Go heap when idle)")
	baseTable := flag.Int64("basetable", 0, "store.BadgerOptions.BaseTableSize (0: what the budget or default gives)")
	memTable := flag.Int64("memtable", 0, "store.BadgerOptions.MemTableSize (0: what the budget or default gives)")
	goLimit := flag.Int64("golimit", 0, "store.BadgerOptions.GoMemoryLimit (0: what the budget gives, -1: none)")
	flag.Parse()
	r := Report{Messages: *n, Body: *body, Budget: *budget}
	opts := &equeue.Options{MemoryBudget: *budget}
	opts.Badger = &store.BadgerOptions{KeepOSMemoryWhenIdle: *keepIdle, BaseTableSize: *baseTable, MemTableSize: *memTable, GoMemoryLimit: *goLimit}
	if err := run(&r, opts, *senders, *batch, *idle, *dir, *heap); err != nil {
		fmt.Fprintln(os.Stderr, "rssprobe:", err)
		os.Exit(1)
	}
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		fmt.Fprintln(os.Stderr, "rssprobe:", err)
		os.Exit(1)
	}
}

func run(r *Report, opts *equeue.Options, senders, batch int, idle time.Duration, dir, heap string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if dir == "" {
		d, err := os.MkdirTemp("", "equeue-rssprobe-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	r.BaseKiB = settled()

	e, err := equeue.Open(dir, opts)
	if err != nil {
		return err
	}
	if err := e.CreateTopic(ctx, "t", 4); err != nil {
		_ = e.Close()
		return err
	}
	p, err := equeue.NewProducer(e, nil)
	if err != nil {
		_ = e.Close()
		return err
	}
	start := time.Now()
	stop := make(chan struct{})
	var sampled, heapMax, anonMax, fileMax atomic.Int64
	var swg sync.WaitGroup
	swg.Go(func() { sample(stop, &sampled, &heapMax, &anonMax, &fileMax) })
	werr := write(ctx, p, r.Messages, r.Body, senders, batch)
	close(stop)
	swg.Wait()
	r.WriteSeconds = time.Since(start).Seconds()
	r.CPUMicrosPerMsg = float64(cpuTime().Microseconds()) / float64(max(r.Messages, 1))
	r.WritePeakKiB = status("VmHWM:")
	r.WriteMaxSampledKiB = sampled.Load()
	r.WriteHeapInuseKiB = heapMax.Load() >> 10
	r.WriteAnonKiB, r.WriteFileKiB = anonMax.Load(), fileMax.Load()
	if werr != nil {
		_ = p.Close()
		_ = e.Close()
		return werr
	}

	time.Sleep(idle)
	r.IdleKiB = status("VmRSS:")
	r.IdleSettledKiB = settled()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.IdleHeapInuseKiB = int64(ms.HeapInuse >> 10)
	r.IdleAnonKiB, r.IdleFileKiB = status("RssAnon:"), status("RssFile:")
	if os.Getenv("RSSPROBE_SMAPS") != "" {
		smaps, _ := os.ReadFile("/proc/self/smaps")
		_ = os.WriteFile(os.Getenv("RSSPROBE_SMAPS"), smaps, 0o644)
	}
	if heap != "" {
		if err := writeHeap(heap); err != nil {
			return err
		}
	}
	if err := p.Close(); err != nil {
		return err
	}
	if err := e.Close(); err != nil {
		return err
	}

	e, err = equeue.Open(dir, opts)
	if err != nil {
		return err
	}
	defer e.Close()
	if _, err := e.Pull(ctx, &equeue.PullRequest{Topic: "t", Queue: 0, Offset: 0, Max: 32}); err != nil {
		return fmt.Errorf("read after reopen: %w", err)
	}
	r.ReopenKiB = settled()
	r.ReopenFileKiB = status("RssFile:")
	return nil
}

// write sends n messages from senders goroutines in batches.
func write(ctx context.Context, p *equeue.Producer, n, size, senders, batch int) error {
	bodyBytes := bytes.Repeat([]byte("x"), size)
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range senders {
		wg.Go(func() {
			msgs := make([]*equeue.Message, 0, batch)
			for {
				from := next.Add(int64(batch)) - int64(batch)
				if from >= int64(n) {
					return
				}
				k := min(int64(batch), int64(n)-from)
				msgs = msgs[:0]
				for range k {
					msgs = append(msgs, &equeue.Message{Topic: "t", Body: bodyBytes})
				}
				if _, err := p.SendBatch(ctx, msgs); err != nil {
					errOnce.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// sample records the largest VmRSS and Go HeapInuse seen every 10 ms (the heap
// every 50 ms) until stop is closed.
func sample(stop <-chan struct{}, rss, heap, anon, file *atomic.Int64) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	var ms runtime.MemStats
	for tick := 0; ; tick++ {
		raise(rss, status("VmRSS:"))
		raise(anon, status("RssAnon:"))
		if f := status("RssFile:"); f > file.Load() {
			file.Store(f)
			if p := os.Getenv("RSSPROBE_PEAKSMAPS"); p != "" {
				smaps, _ := os.ReadFile("/proc/self/smaps")
				_ = os.WriteFile(p, smaps, 0o644)
			}
		}
		// ReadMemStats stops the world briefly; every 5th tick is enough.
		if tick%5 == 0 {
			runtime.ReadMemStats(&ms)
			if v := int64(ms.HeapInuse); v > heap.Load() {
				if p := os.Getenv("RSSPROBE_PEAKHEAP"); p != "" && v > heap.Load()*11/10 {
					_ = writeHeap(p)
				}
				heap.Store(v)
			}
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// raise sets m to v if v is larger.
func raise(m *atomic.Int64, v int64) {
	if v > m.Load() {
		m.Store(v)
	}
}

func writeHeap(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// settled collects garbage, returns freed memory to the OS and reads VmRSS.
func settled() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	return status("VmRSS:")
}

// status returns a "kB" field of /proc/self/status (0 where there is none).
func status(field string) int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	s := bufio.NewScanner(bytes.NewReader(b))
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
